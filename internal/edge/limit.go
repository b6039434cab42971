package edge

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// codeRateLimited is the JSON-RPC error code (from the range JSON-RPC
// leaves to servers) for a request refused by a tenant limit where no tool
// result can carry rate_limited, such as a tools/list over the cap.
const codeRateLimited = -32029

// MCPLimitsOptions configures MCPLimits.
type MCPLimitsOptions struct {
	// Limits holds the tenants' buckets and caps. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant from the request context.
	// Required.
	Tenant func(ctx context.Context) (string, bool)
	// KindFor says which bucket a tool draws from. Required.
	KindFor func(tool string) limits.Kind
}

// MCPLimits applies the tenant limits to the MCP endpoint. Every request
// takes one of its tenant's concurrency slots for as long as it runs; a
// tools/call also draws from its tool's bucket (reads or writes). Only
// tool calls draw from buckets: the MCP spec asks servers to rate-limit
// tool invocations, and listing is cheap.
//
// A refused tools/call is a tool result with isError and
//
//	{"error":{"code":"rate_limited","message","retryable":true,"retry_after_ms"}}
//
// so the model reads it like any other tool error; any other refused
// request gets 429 with Retry-After and a JSON-RPC error body. It needs
// MCPBody and token verification before it; a request with no tenant
// passes (there is nothing to count it against).
func MCPLimits(opts MCPLimitsOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r.Context())
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			call, _ := CallFrom(r.Context())
			release, wait, ok := opts.Limits.Acquire(tenant)
			if !ok {
				refuseMCP(w, r, call, wait, "too many requests from this tenant at once")
				return
			}
			defer release()
			if call.Method == "tools/call" {
				if ok, wait := opts.Limits.Allow(tenant, opts.KindFor(call.Tool)); !ok {
					refuseMCP(w, r, call, wait, "this tenant's rate limit for this kind of call is reached")
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

func refuseMCP(w http.ResponseWriter, r *http.Request, call Call, wait time.Duration, why string) {
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	message := fmt.Sprintf("%s: %s; retry after %d ms", errcode.RateLimited, why, ms)
	NoteRefusal(r, call, errcode.RateLimited, why)
	if call.Method == "tools/call" && call.ID != nil {
		writeReply(w, http.StatusOK, toolResult(call, contractError{Code: errcode.RateLimited, Message: message, Retryable: errcode.RateLimited.Retryable(), RetryAfterMS: &ms},
			message+", with the same arguments (the same operation_id for a write)."))
		return
	}
	w.Header().Set("Retry-After", retryAfterSeconds(wait))
	writeReply(w, http.StatusTooManyRequests, rpcError(call.ID, codeRateLimited, message))
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
// concurrency slot while it runs and draws from its kind's bucket. A
// refusal is 429 with Retry-After (whole seconds, rounded up) and code
// rate_limited. It needs the tenant known, so it goes after
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
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			release, wait, ok := opts.Limits.Acquire(tenant)
			if !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(wait))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "too many requests from this tenant at once; retry after the Retry-After delay")
				return
			}
			defer release()
			if ok, wait := opts.Limits.Allow(tenant, kind(r)); !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(wait))
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

// BodiesOptions configures Bodies.
type BodiesOptions struct {
	// Budget is the bound on body bytes held at once, shared by every route
	// it wraps. Required.
	Budget *limits.Bytes
	// MaxBytes caps one body; DefaultMaxBody if zero. A body without a
	// declared length reserves this much.
	MaxBytes int64
	// Reject writes the 503; WriteError if nil.
	Reject Reject
}

// Bodies reserves each request's body size (its Content-Length, or
// MaxBytes when it declares none) from a global budget for as long as the
// request runs, and caps what can be read at that size. When the budget is
// spent the request is refused at once with 503, Retry-After: 1 and code
// unavailable: many slow uploads together can hold no more than the budget,
// from any mix of tenants and before any token is checked. Requests
// without a body pass free.
func Bodies(opts BodiesOptions) func(http.Handler) http.Handler {
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
				next.ServeHTTP(w, r)
				return
			}
			n := limit
			if r.ContentLength > 0 && r.ContentLength < limit {
				n = r.ContentLength
			}
			release, ok := opts.Budget.Reserve(n)
			if !ok {
				w.Header().Set("Retry-After", "1")
				reject(w, r, http.StatusServiceUnavailable, errcode.Unavailable, "the server is holding as many request bodies as it can; retry shortly")
				return
			}
			defer release()
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}
