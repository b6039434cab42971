// Package mcpedge is the edge of ticketd's MCP endpoint: the checks that
// must run on /mcp before the MCP SDK sees a request (hostile JSON-RPC
// bodies, the 401 challenge's scopes, step-up scopes, the tenant's rate
// buckets) and the order they run in, Chain. The guards every route shares
// (Origin and Host, one Authorization header, the tenant's concurrency
// bounds, the body budget) are internal/server's; Chain places them, built,
// among its own. The MCP server itself gets FilterTools as receiving
// middleware and PrivateToolList as ServerOptions.SetCacheable, and stdio
// runs CheckMessage on every line (internal/stdioguard).
package mcpedge

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/observe"
)

// Config is what the /mcp chain needs. Every field is required.
type Config struct {
	// Origin, SingleAuthorization and Bodies are the guards internal/server
	// builds for every route, configured for /mcp: the tenant from Caller,
	// refusals written by Reject.
	Origin, SingleAuthorization, Bodies func(http.Handler) http.Handler
	// Verify checks the bearer token (mcptools.TokenVerifier).
	Verify auth.TokenVerifier
	// Caller returns the principal Verify found, from the request context
	// (mcptools.PrincipalFrom).
	Caller func(ctx context.Context) (authn.Principal, bool)
	// Scopes returns the scopes the verified caller may use
	// (mcptools.TokenScopes).
	Scopes func(ctx context.Context) []string
	// ScopeFor maps each tool the server serves to its scope
	// (mcptools.ScopeFor); tools needing only tickets:read draw from the
	// read bucket, the rest from the write bucket.
	ScopeFor ScopeFor
	// Limits holds the tenants' rate buckets.
	Limits *limits.Tenants
	// ChallengeScopes are the scopes a 401 challenge names.
	ChallengeScopes []string
	// ResourceMetadataURL is this resource's RFC 9728 metadata URL, named
	// in every challenge.
	ResourceMetadataURL string
	// MaxBodyBytes bounds one body (tickets.MaxInputBytes).
	MaxBodyBytes int64
	// Metrics counts the requests the chain answers itself.
	Metrics *observe.Metrics
}

// Chain returns the /mcp edge in front of the SDK's handler, outermost
// first (docs/architecture.md#the-edge-in-the-order-it-is-wired):
//
//	countRefusals → Origin → SingleAuthorization → scopedChallenge →
//	auth.RequireBearerToken → noteCaller → Bodies →
//	EarlyLimits → Body → requireTicketdScope → StepUp → Limits → the SDK's
//	handler
//
// Origin refuses before anything runs; SingleAuthorization bounds the
// header before any token is parsed; the token is verified before a byte of
// the body is read, so Bodies counts every upload against its own tenant
// first (docs/contract.md#fair-share): a tenant's stalled uploads fill its
// own upload slots and its share of the body budget, never everyone's.
// What a call runs after its body is in is admitted by the MCP server
// (mcptools.Options.Admission), where its id is known. EarlyLimits refuses
// a call to a spent bucket before the message is checked in full, when it
// is sure of it. Body feeds the checks
// after it the peeked Call, so their
// refusals answer the request's id; StepUp's 403s are cheap and draw on no
// bucket.
func Chain(c Config) func(http.Handler) http.Handler {
	tenant := func(ctx context.Context) (string, bool) {
		p, ok := c.Caller(ctx)
		return p.Tenant, ok
	}
	steps := []func(http.Handler) http.Handler{
		countRefusals(c.Metrics, c.ScopeFor),
		c.Origin,
		c.SingleAuthorization,
		scopedChallenge(c.ChallengeScopes),
		// No Scopes: they are endpoint-wide; StepUp checks each tool's.
		auth.RequireBearerToken(c.Verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: c.ResourceMetadataURL}),
		noteCaller(c.Caller),
		c.Bodies,
		EarlyLimits(EarlyLimitsOptions{Limits: c.Limits, Tenant: tenant, KindFor: kindFor(c.ScopeFor), ScopeFor: c.ScopeFor, Scopes: c.Scopes}),
		Body(c.MaxBodyBytes),
		requireTicketdScope(c.ResourceMetadataURL, c.ChallengeScopes, c.Scopes),
		StepUp(StepUpOptions{ScopeFor: c.ScopeFor, Scopes: c.Scopes, ResourceMetadataURL: c.ResourceMetadataURL}),
		Limits(LimitsOptions{Limits: c.Limits, Tenant: tenant, KindFor: kindFor(c.ScopeFor)}),
	}
	return func(sdk http.Handler) http.Handler {
		for i := len(steps) - 1; i >= 0; i-- {
			sdk = steps[i](sdk)
		}
		return sdk
	}
}
