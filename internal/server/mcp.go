package server

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/tickets"
)

// mcp is /mcp: the MCP tools over stateless Streamable HTTP behind the
// chain package mcpedge declares, with the generic guards built for it.
func (w *wiring) mcp() http.Handler {
	// One server for all requests: stateless serving keeps nothing in it
	// between calls, and the handler asks for it twice per request.
	toolOpts := mcptools.Options{ReadOnly: w.cfg.Edge.ReadOnly, Toolsets: w.cfg.Edge.Toolsets, Metrics: w.metrics, Admission: w.guards.admission, HoldRefusal: w.guards.tenants.Hold}
	mcpServer := mcptools.NewServer(w.cfg.Service, w.logger, toolOpts)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{
		// Stateless: any replica answers any request, and protocol
		// 2026-07-28 (sessionless) is served as well as older clients.
		Stateless: true,
		Logger:    w.logger.With("component", "mcp"),
		// Origin checks Host in every mode, in front of this; the SDK's own
		// guard would refuse a proxy that connects over loopback with the
		// public Host.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        tickets.MaxInputBytes,
		// One JSON body per answer instead of an SSE stream: a stateless
		// server sends nothing before the result (no progress, no server
		// requests), and SSE framing costs a flush and its socket writes per
		// event. Clients must accept both anyway.
		JSONResponse: true,
	})
	caller := func(ctx context.Context) (authn.Principal, bool) {
		return mcptools.PrincipalFrom(auth.TokenInfoFromContext(ctx))
	}
	tenant := func(r *http.Request) (string, bool) {
		p, ok := caller(r.Context())
		return p.Tenant, ok
	}
	return mcpedge.Chain(mcpedge.Config{
		Origin:              w.guards.origin,
		SingleAuthorization: SingleAuthorization(noteMCPRefusal),
		Bodies:              Bodies(BodiesOptions{Budget: w.guards.budget, Uploads: w.guards.tenants, Tenant: tenant, MaxBytes: tickets.MaxInputBytes, Reject: mcpedge.Reject}),
		Verify:              mcptools.TokenVerifier(w.cfg.Verifier),
		Caller:              caller,
		Scopes:              mcptools.TokenScopes,
		ScopeFor:            mcptools.ScopeFor(toolOpts),
		Limits:              w.guards.tenants,
		ChallengeScopes:     w.scopes,
		ResourceMetadataURL: w.metadataURL,
		MaxBodyBytes:        tickets.MaxInputBytes,
		Metrics:             w.metrics,
	})(sdk)
}
