package server

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// LimitOptions configures Limit.
type LimitOptions struct {
	// Limits holds the tenants' buckets. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(r *http.Request) (string, bool)
	// Kind says which bucket a request draws from; if nil, GET, HEAD and
	// OPTIONS are reads and every other method a write.
	Kind func(r *http.Request) limits.Kind
	// Reject writes the 429; WriteError if nil.
	Reject Reject
}

// Limit applies the tenant rate buckets to a REST API: each request draws
// from its kind's bucket. A refusal is 429 with Retry-After (whole seconds,
// rounded up) and code rate_limited, not queued: over its bucket a tenant
// is refused, whatever the server has free. It needs the tenant known, so
// it goes after authentication; a request with no tenant passes.
func Limit(opts LimitOptions) func(http.Handler) http.Handler {
	kind := opts.Kind
	if kind == nil {
		kind = methodKind
	}
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
			if ok, wait := opts.Limits.Allow(tenant, kind(r)); !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Limits.Hold(r.Context(), tenant, wait)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "this tenant's rate limit is reached; retry after the Retry-After delay")
				return
			}
			next.ServeHTTP(w, r)
		})
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
