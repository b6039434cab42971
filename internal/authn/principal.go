// Package authn turns a bearer JWT into a Principal: the tenant, subject and
// scopes every ticketd call is authorised against.
//
// It knows nothing about HTTP routing or MCP sessions. The streamable HTTP
// transport adapts Verifier.Verify to the SDK (mcptools.TokenVerifier); the
// stdio transport, which has no request to carry a token, verifies one at
// start-up and puts the result in the context with ContextWithPrincipal.
package authn

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// The scopes ticketd understands. A token may carry others; they are kept in
// Principal.Scopes but grant nothing.
const (
	ScopeRead  = "tickets:read"
	ScopeWrite = "tickets:write"
	ScopeAdmin = "tickets:admin"
	// ScopeApprove is a person's: it decides approvals (docs/approval.md),
	// alone, without ScopeWrite. An agent's token never carries it, so an
	// agent cannot approve its own write; ScopeAdmin does not imply it.
	ScopeApprove = "tickets:approve"
)

// Principal is the authenticated caller. Tenant scopes every query, so it only
// ever comes from a verified token, never from tool or request arguments.
type Principal struct {
	Tenant  string
	Subject string
	// Scopes are the token's scopes, verbatim and in token order.
	Scopes []string
	// Expires is the token's exp claim.
	Expires time.Time
	// AcceptUntil is the last instant the token is accepted: Expires plus
	// the verifier's leeway. It is the one expiry policy of every
	// transport: REST's verification, the HTTP MCP endpoint's bearer check
	// and the per-call check (which refuses a long-lived stdio principal
	// once it has passed) all accept a token up to the same leeway past
	// exp, so a token never works on one transport and fails on another.
	AcceptUntil time.Time
}

// Expired reports whether p's token is no longer accepted at now: past
// AcceptUntil, or past Expires for a Principal built without a verifier.
func (p Principal) Expired(now time.Time) bool {
	deadline := cmp.Or(p.AcceptUntil, p.Expires)
	return !deadline.IsZero() && !now.Before(deadline)
}

// HasScope reports whether p grants scope. Scopes are compared literally with
// one exception: ScopeAdmin also grants ScopeRead and ScopeWrite, so an
// operator token does not have to list all three. ScopeWrite does not imply
// ScopeRead, and nothing implies ScopeApprove: approving is granted to a
// person by name, never by way of an operator's or an agent's scopes.
func (p Principal) HasScope(scope string) bool {
	if slices.Contains(p.Scopes, scope) {
		return true
	}
	return (scope == ScopeRead || scope == ScopeWrite) && slices.Contains(p.Scopes, ScopeAdmin)
}

type principalKey struct{}

// ContextWithPrincipal returns a copy of ctx carrying p. The stdio transport
// uses it because there is no HTTP request, and so no TokenInfo, to carry the
// principal verified at start-up.
func ContextWithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFromContext returns the Principal stored by ContextWithPrincipal;
// ok is false if there is none.
func PrincipalFromContext(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}
