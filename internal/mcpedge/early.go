package mcpedge

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// EarlyLimitsOptions configures EarlyLimits.
type EarlyLimitsOptions struct {
	// Limits holds the tenants' buckets. Required.
	Limits *limits.Tenants
	// Tenant returns the verified caller's tenant. Required.
	Tenant func(ctx context.Context) (string, bool)
	// KindFor says which bucket a tool draws from. Required.
	KindFor func(tool string) limits.Kind
	// ScopeFor and Scopes say whether the token may call the tool at all
	// (as StepUp decides). Required.
	ScopeFor ScopeFor
	Scopes   func(ctx context.Context) []string
}

// EarlyLimits refuses a tools/call while its tenant's bucket for the tool
// is empty before the message is checked in full (Body, CheckMessage),
// which costs most of a refusal's CPU: a flood that ignores retry_after
// then costs the server little more than a refusal at the concurrency cap.
// It goes after Bodies, which read the body (HeldBody), and before Body.
//
// It looks only while one of the tenant's buckets is empty (a lock and a
// map look-up otherwise), reads the message as Body will (CheckMessage),
// and refuses only a valid tools/call, with an id, of a tool the token
// may call and whose bucket is empty; anything else goes on to the full
// checks and to Limits, which still draws from the bucket for every call
// that gets that far. So no call passes that Limits would refuse, and a
// call refused here is one Limits would refuse in the same words.
func EarlyLimits(opts EarlyLimitsOptions) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if call, wait, refuse := opts.refuse(r); refuse {
				tenant, _ := opts.Tenant(r.Context())
				refuseMCP(w, r, call, opts.Limits.Hold(r.Context(), tenant, wait), "this tenant's rate limit for this kind of call is reached")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// refuse decides EarlyLimits: whether r is sure to be refused by Limits,
// and the wait to name.
func (opts EarlyLimitsOptions) refuse(r *http.Request) (Call, time.Duration, bool) {
	held, isHeld := r.Body.(HeldBody)
	tenant, ok := opts.Tenant(r.Context())
	if !isHeld || !ok {
		return Call{}, 0, false
	}
	writes, waitW := opts.Limits.Spent(tenant, limits.Write)
	reads, waitR := opts.Limits.Spent(tenant, limits.Read)
	if !writes && !reads {
		return Call{}, 0, false
	}
	// The message is read as the full checks read it (a microsecond for a
	// typical call, docs/perf.md), and only one they accept is refused here.
	call, invalid := CheckMessage(held.Held())
	if invalid != nil || call.Method != "tools/call" || call.ID == nil || !opts.mayCall(r.Context(), call.Tool) {
		return Call{}, 0, false
	}
	if opts.KindFor(call.Tool) == limits.Write {
		return call, waitW, writes
	}
	return call, waitR, reads
}

// mayCall reports whether the token's scopes cover tool, a tool this
// server serves: otherwise StepUp answers (403 or the SDK's unknown tool),
// not a rate limit.
func (opts EarlyLimitsOptions) mayCall(ctx context.Context, tool string) bool {
	scope, known := opts.ScopeFor(tool)
	return known && slices.Contains(opts.Scopes(ctx), scope)
}
