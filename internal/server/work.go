package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// ShareWorkOptions configures ShareWork.
type ShareWorkOptions struct {
	// Admission admits the server's work, shared with the MCP tools
	// (mcptools.Options.Admission). Required.
	Admission *limits.Admission
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(r *http.Request) (string, bool)
	// Hold holds a refusal before it is answered (limits.Tenants.Hold);
	// nil answers at once.
	Hold func(ctx context.Context, tenant string, wait time.Duration) time.Duration
	// Reject writes the refusals; WriteError if nil.
	Reject Reject
}

// ShareWork admits the REST requests that are the server's work, writes
// and list pages, through the same limits.Admission the MCP tools go
// through: a list page takes one of its tenant's page slots, the MCP
// lists' own, and then a work slot; a write a work slot. A tenant alone
// may use every slot; beyond what is free a request waits its turn, so a
// tenant flooding one transport cannot keep another tenant's calls on
// either waiting behind its queue. It goes after Bodies: a request waits
// its turn with its body read, so a stalled upload never holds a slot
// every tenant shares. Past the wait bound or with the tenant's queue
// full: 429 rate_limited with Retry-After, held first by Hold. A request
// whose caller goes away while it waits did nothing: 503 unavailable,
// which no one reads. Other requests (one ticket, an operation, the
// projects) are cheap and pass.
func ShareWork(opts ShareWorkOptions) func(http.Handler) http.Handler {
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	hold := opts.Hold
	if hold == nil {
		hold = func(_ context.Context, _ string, wait time.Duration) time.Duration { return wait }
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			work, page := isWork(r)
			if !work {
				next.ServeHTTP(w, r)
				return
			}
			ctx, release, err := opts.Admission.Admit(r.Context(), tenant, page)
			switch {
			case errors.Is(err, limits.ErrWorkQueueFull):
				w.Header().Set("Retry-After", retryAfterSeconds(hold(r.Context(), tenant, limits.WorkRetryAfter)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "the server is busy and this tenant has as many requests waiting as it may; retry after the Retry-After delay")
				return
			case errors.Is(err, limits.ErrAdmissionWait):
				w.Header().Set("Retry-After", retryAfterSeconds(hold(r.Context(), tenant, limits.WorkRetryAfter)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "the server is busy and this request waited its turn as long as it may; retry after the Retry-After delay")
				return
			case err != nil:
				reject(w, r, http.StatusServiceUnavailable, errcode.Unavailable, "the request ended while it waited for the server's work slots; nothing was done")
				return
			}
			defer release()
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// isWork reports whether r is the server's work: a write (methodKind), or
// a list page of tickets or of a ticket's comments (page), the REST twins
// of the tools mcptools shares out (its writes and pageTools).
func isWork(r *http.Request) (work, page bool) {
	path := strings.TrimSuffix(r.URL.Path, "/")
	page = r.Method == http.MethodGet && (path == APIPrefix+"tickets" || strings.HasPrefix(path, APIPrefix+"tickets/") && strings.HasSuffix(path, "/comments"))
	return page || methodKind(r) == limits.Write, page
}
