package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcpedge"
)

// BodiesOptions configures Bodies.
type BodiesOptions struct {
	// Budget bounds the body bytes held at once: each tenant's share, then
	// the budget every route it wraps shares. Required.
	Budget *limits.Bodies
	// Uploads caps each tenant's requests reading their body at once
	// (limits.Tenants.Acquire, TICKETD_TENANT_CONCURRENCY). Required.
	Uploads *limits.Tenants
	// Tenant returns the verified caller's tenant; a request without one
	// counts as the tenant "" (so unauthenticated bodies share one share).
	// Required.
	Tenant func(r *http.Request) (string, bool)
	// MaxBytes caps one body (tickets.MaxInputBytes). Required.
	MaxBytes int64
	// Reject writes the refusals (429, 503); WriteError if nil.
	Reject Reject
}

// Bodies reads each request's body before the handler runs, taking the
// bytes from the caller's tenant share and then from the global budget as
// they arrive (never what a Content-Length merely declares), and hands the
// handler the bytes it read. It runs after the token is verified, and each
// read holds one of the tenant's upload slots (Uploads) until the body is
// in, so a tenant's stalled uploads hold its own upload slots and its own
// share of bytes, not everyone's, and a request whose body is in holds
// neither (what it runs next waits its turn, limits.Admission). These are
// the only refusals made before the body, and so a tools/call's id, is
// read:
//
//   - the tenant has as many uploads at once as it may: 429 rate_limited
//     with Retry-After;
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
			upload, wait, ok := opts.Uploads.Acquire(tenant)
			if !ok {
				w.Header().Set("Retry-After", retryAfterSeconds(opts.Uploads.Hold(r.Context(), tenant, wait)))
				reject(w, r, http.StatusTooManyRequests, errcode.RateLimited, "this tenant is sending as many request bodies at once as it may; retry after the Retry-After delay")
				return
			}
			hold := opts.Budget.Hold(tenant)
			defer hold.Release()
			body, refusal, err := readHeld(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit, hold)
			upload()
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

// heldBody is a body Bodies already read: the /mcp body guard takes its
// bytes as they are (mcpedge.HeldBody) instead of copying them again.
type heldBody struct {
	*bytes.Reader
	body []byte
}

var _ mcpedge.HeldBody = (*heldBody)(nil)

func (*heldBody) Close() error { return nil }

// Held returns the body's bytes, for mcpedge.HeldBody.
func (b *heldBody) Held() []byte { return b.body }

// failedBody is a body whose reads fail with err.
type failedBody struct{ err error }

func (b failedBody) Read([]byte) (int, error) { return 0, b.err }

func (failedBody) Close() error { return nil }
