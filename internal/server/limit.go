package server

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// ConcurrencyOptions configures Concurrency.
type ConcurrencyOptions struct {
	// Limits holds the tenants' caps. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(r *http.Request) (string, bool)
	// Reject writes the 429; WriteError if nil (mcpedge.Reject on /mcp).
	Reject Reject
}

// Concurrency takes one of the caller's tenant's concurrency slots for as
// long as the request runs, body upload included: it goes after token
// verification and before Bodies, so a tenant's stalled uploads use up its
// own slots, never a budget every tenant shares, and a refusal costs no
// body read. Over the cap: 429 with Retry-After and code rate_limited,
// whatever the method (the body, and so a tools/call's id, is not read
// yet). A request with no tenant passes.
func Concurrency(opts ConcurrencyOptions) func(http.Handler) http.Handler {
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			release, wait, ok := opts.Limits.Acquire(tenant)
			if !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Limits.Hold(r.Context(), wait)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "too many requests from this tenant at once; retry after the Retry-After delay")
				return
			}
			defer release()
			next.ServeHTTP(w, r)
		})
	}
}

// LimitOptions configures Limit.
type LimitOptions struct {
	// Limits holds the tenants' buckets and caps. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(r *http.Request) (string, bool)
	// Kind says which bucket a request draws from; if nil, GET, HEAD and
	// OPTIONS are reads and every other method a write.
	Kind func(r *http.Request) limits.Kind
	// Reject writes the 429; WriteError if nil.
	Reject Reject
}

// Limit applies the tenant limits to a REST API: each request takes a
// concurrency slot while it runs (Concurrency) and draws from its kind's
// bucket. A refusal is 429 with Retry-After (whole seconds, rounded up) and
// code rate_limited. It needs the tenant known, so it goes after
// authentication; a request with no tenant passes.
func Limit(opts LimitOptions) func(http.Handler) http.Handler {
	kind := opts.Kind
	if kind == nil {
		kind = methodKind
	}
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	slot := Concurrency(ConcurrencyOptions{Limits: opts.Limits, Tenant: opts.Tenant, Reject: reject})
	return func(next http.Handler) http.Handler {
		return slot(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			if ok, wait := opts.Limits.Allow(tenant, kind(r)); !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Limits.Hold(r.Context(), wait)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "this tenant's rate limit is reached; retry after the Retry-After delay")
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
}

func methodKind(r *http.Request) limits.Kind {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return limits.Read
	}
	return limits.Write
}

// retryAfterSeconds renders a wait as Retry-After's whole seconds, rounded
// up and at least 1, so a client that honours it is never early.
func retryAfterSeconds(wait time.Duration) string {
	return strconv.FormatInt(max(1, int64(math.Ceil(wait.Seconds()))), 10)
}
