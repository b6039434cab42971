package edge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// MCPLimits applies the tenant rate limits to the MCP endpoint: a
// tools/call draws from its tool's bucket (reads or writes). Only tool
// calls draw from buckets: the MCP spec asks servers to rate-limit tool
// invocations, and listing is cheap. The tenant's concurrency cap is
// Concurrency's, which runs before the body is read.
//
// A refused tools/call is a tool result with isError and
//
//	{"error":{"code":"rate_limited","message","retryable":true,"retry_after_ms"}}
//
// so the model reads it like any other tool error. It needs MCPBody and
// token verification before it; a request with no tenant passes (there is
// nothing to count it against).
func MCPLimits(opts MCPLimitsOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r.Context())
			call, _ := CallFrom(r.Context())
			if ok && call.Method == "tools/call" {
				if ok, wait := opts.Limits.Allow(tenant, opts.KindFor(call.Tool)); !ok {
					refuseMCP(w, r, call, opts.Limits.Hold(r.Context(), wait), "this tenant's rate limit for this kind of call is reached")
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// ConcurrencyOptions configures Concurrency.
type ConcurrencyOptions struct {
	// Limits holds the tenants' caps. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(r *http.Request) (string, bool)
	// Reject writes the 429; WriteError if nil (MCPReject on /mcp).
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
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Limits.Hold(r.Context(), wait)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "too many requests from this tenant at once; retry after the Retry-After delay")
				return
			}
			defer release()
			if ok, wait := opts.Limits.Allow(tenant, kind(r)); !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Limits.Hold(r.Context(), wait)))
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
	// Budget bounds the body bytes held at once: each tenant's share, then
	// the budget every route it wraps shares. Required.
	Budget *limits.Bodies
	// Tenant returns the verified caller's tenant; a request without one
	// counts as the tenant "" (so unauthenticated bodies share one share).
	// Required.
	Tenant func(r *http.Request) (string, bool)
	// MaxBytes caps one body; DefaultMaxBody if zero.
	MaxBytes int64
	// Reject writes the refusals (429, 503); WriteError if nil.
	Reject Reject
}

// Bodies reads each request's body before the handler runs, taking the
// bytes from the caller's tenant share and then from the global budget as
// they arrive (never what a Content-Length merely declares), and hands the
// handler the bytes it read. It runs after the token is verified and after
// the tenant's concurrency cap, so a tenant's stalled uploads hold its own
// request slots and its own share of bytes, not everyone's:
//
//   - the tenant's share is full: 429 rate_limited with Retry-After;
//   - the global budget is spent (several tenants at once): 503
//     unavailable with Retry-After, and Budget.Spent turns /readyz to 503;
//
// A body over MaxBytes (declared, or as it arrives) or one that cannot be
// read reaches the handler as a body whose reads fail with that error
// (*http.MaxBytesError for the size), so the route answers 413 or 400 in
// its own words, as without Bodies. Requests without a body pass free.
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
			if r.ContentLength > limit {
				// The route answers 413 in its own words, reading nothing.
				r.Body = failedBody{&http.MaxBytesError{Limit: limit}}
				next.ServeHTTP(w, r)
				return
			}
			tenant, _ := opts.Tenant(r)
			hold := opts.Budget.Hold(tenant)
			defer hold.Release()
			body, refusal, err := readHeld(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit, hold)
			switch {
			case refusal == limits.TenantShare:
				w.Header().Set("Retry-After", "1")
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "this tenant is sending as many request bodies at once as it may; retry after the Retry-After delay")
				return
			case refusal == limits.Global:
				w.Header().Set("Retry-After", "1")
				reject(w, r, http.StatusServiceUnavailable, errcode.Unavailable, "the server is holding as many request bodies as it can; retry after the Retry-After delay")
				return
			case err != nil:
				// Too large, or the client went away: the route reads the
				// same error and answers it in its own words.
				r.Body = failedBody{err}
				next.ServeHTTP(w, r)
				return
			}
			r.Body = &heldBody{Reader: bytes.NewReader(body), body: body}
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r)
		})
	}
}

// firstRead is the buffer a body starts in. The buffer doubles as it
// fills, and every byte of it is taken from the budget before it is
// allocated, so a stalled upload holds about what it sent, never what it
// declared.
const firstRead = 4 << 10

// readHeld reads body to its end into a buffer whose every byte is taken
// from hold first, as io.ReadAll would read it. On a refusal it stops at
// once and says what refused.
func readHeld(body io.Reader, declared, limit int64, hold *limits.Hold) ([]byte, limits.Refusal, error) {
	// One byte more than the limit, or than declared, so the read that
	// finds the end (or the excess) needs no larger buffer.
	size := min(firstRead, limit+1)
	if declared > 0 {
		size = min(size, declared+1)
	}
	if refusal := hold.Take(size); refusal != limits.Admitted {
		return nil, refusal, nil
	}
	buf := make([]byte, 0, size)
	for {
		if len(buf) == cap(buf) {
			grow := min(int64(cap(buf)), limit+1-int64(cap(buf)))
			if grow <= 0 {
				return nil, limits.Admitted, &http.MaxBytesError{Limit: limit}
			}
			if refusal := hold.Take(grow); refusal != limits.Admitted {
				return nil, refusal, nil
			}
			buf = append(make([]byte, 0, int64(cap(buf))+grow), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, limits.Admitted, nil
		}
		if err != nil {
			return nil, limits.Admitted, err
		}
	}
}

// heldBody is a body Bodies already read: MCPBody takes its bytes as they
// are instead of copying them again.
type heldBody struct {
	*bytes.Reader
	body []byte
}

func (*heldBody) Close() error { return nil }

// failedBody is a body whose reads fail with err.
type failedBody struct{ err error }

func (b failedBody) Read([]byte) (int, error) { return 0, b.err }

func (failedBody) Close() error { return nil }
