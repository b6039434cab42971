package mcpedge

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// LimitsOptions configures Limits.
type LimitsOptions struct {
	// Limits holds the tenants' buckets and caps. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant from the request context.
	// Required.
	Tenant func(ctx context.Context) (string, bool)
	// KindFor says which bucket a tool draws from. Required.
	KindFor func(tool string) limits.Kind
}

// Limits applies the tenant rate limits to the MCP endpoint: a
// tools/call draws from its tool's bucket (reads or writes), and a
// resources/read, prompts/get or completion/complete, which read tickets
// as the read tools do, from the reads'. Listing is cheap and draws from
// none. Over its bucket a call is refused,
// not queued; what it runs once admitted waits its turn in the MCP server
// (mcptools.Options.Admission).
//
// A refused tools/call is a tool result with isError and
//
//	{"error":{"code":"rate_limited","message","retryable":true,"retry_after_ms"}}
//
// so the model reads it like any other tool error. It needs Body and
// token verification before it; a request with no tenant passes (there is
// nothing to count it against).
func Limits(opts LimitsOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tenant, ok := opts.Tenant(r.Context())
			call, _ := CallFrom(r.Context())
			if kind, limited := limitedKind(call, opts.KindFor); ok && limited {
				if ok, wait := opts.Limits.Allow(tenant, kind); !ok {
					refuseMCP(w, r, call, opts.Limits.Hold(r.Context(), tenant, wait), "this tenant's rate limit for this kind of call is reached")
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// limitedKind says which bucket call draws from, if any.
func limitedKind(call Call, kindFor func(string) limits.Kind) (limits.Kind, bool) {
	switch call.Method {
	case "tools/call":
		return kindFor(call.Tool), true
	case "resources/read", "prompts/get", "completion/complete":
		return limits.Read, true
	}
	return limits.Read, false
}

func refuseMCP(w http.ResponseWriter, r *http.Request, call Call, wait time.Duration, why string) {
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	message := fmt.Sprintf("%s: %s; retry after %d ms", errcode.RateLimited, why, ms)
	NoteRefusal(r, call, errcode.RateLimited, why)
	e := contractError{Code: errcode.RateLimited, Message: message, Retryable: errcode.RateLimited.Retryable(), RetryAfterMS: &ms}
	if call.Method == "tools/call" && call.ID != nil {
		writeReply(w, http.StatusOK, toolResult(call, e, message+", with the same arguments (the same operation_id for a write)."))
		return
	}
	// Whole seconds, rounded up and at least 1, as server.Limit sends them.
	w.Header().Set("Retry-After", strconv.FormatInt(max(1, (ms+999)/1000), 10))
	e.Message = why + fmt.Sprintf("; retry after %d ms", ms)
	writeReply(w, http.StatusTooManyRequests, rpcContractError(call.ID, codeRateLimited, e))
}

// kindFor says which tenant bucket a tool call draws from: tools that need
// only tickets:read are reads, the rest writes. An unknown tool, which the
// SDK refuses at once, counts as a read.
func kindFor(scopeFor ScopeFor) func(tool string) limits.Kind {
	return func(tool string) limits.Kind {
		if scope, ok := scopeFor(tool); ok && scope != authn.ScopeRead {
			return limits.Write
		}
		return limits.Read
	}
}
