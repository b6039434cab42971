package mcpedge_test

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/server"
)

// TestChainInWiringOrder runs the chain the server wires (Chain), with the
// generic guards built by internal/server, and drives it with the go-sdk
// client, so the pieces are known to work together, not only alone.
func TestChainInWiringOrder(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &mcp.ServerOptions{SetCacheable: mcpedge.PrivateToolList})
	s.AddReceivingMiddleware(mcpedge.FilterTools(scopeFor, requestScopes))
	budget, err := limits.NewBodies(8<<20, 2<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	tenants := newLimits(t, limits.Config{WritesPerSecond: 50, ReadsPerSecond: 200})
	requestTenant := func(r *http.Request) (string, bool) { return tenantOf(r.Context()) }
	// The httptest server's Host is 127.0.0.1:port, so a loopback public URL.
	origin, err := server.Origin(server.OriginOptions{PublicURL: "http://127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	url := guarded(t, s, mcpedge.Chain(mcpedge.Config{
		Origin:              origin,
		SingleAuthorization: server.SingleAuthorization(nil),
		Bodies:              server.Bodies(server.BodiesOptions{Budget: budget, Uploads: tenants, Tenant: requestTenant, MaxBytes: 1 << 20, Reject: mcpedge.Reject}),
		Verify:              verify,
		Caller:              callerOf,
		Scopes:              tokenScopes,
		ScopeFor:            scopeFor,
		Limits:              tenants,
		ChallengeScopes:     []string{scopeRead, scopeWrite},
		ResourceMetadataURL: metadataURL,
		MaxBodyBytes:        1 << 20,
		Metrics:             observe.New(observe.Options{}),
	}))

	session, rt := connect(t, url, "read")
	tools, err := session.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "read_thing" {
		t.Fatalf("tools/list: %v %+v", err, tools)
	}
	if res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_thing", Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
		t.Fatalf("read_thing: %v %+v", err, res)
	}
	if _, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "write_thing", Arguments: map[string]any{}}); err == nil || rt.status.Load() != http.StatusForbidden {
		t.Fatalf("write_thing with a read token: %v (status %d), want a 403 step-up", err, rt.status.Load())
	}
	if res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_thing", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("read_thing after the step-up refusal: %v %+v", err, res)
	}

	// Refusals before auth: an evil Origin, and two Authorization headers.
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if status, _ := postStatus(t, url, body, http.Header{"Origin": {"https://evil.example"}, "Authorization": {"Bearer read"}}); status != http.StatusForbidden {
		t.Errorf("evil Origin answered %d, want 403", status)
	}
	if status, _ := postStatus(t, url, body, http.Header{"Authorization": {"Bearer read", "Bearer both"}}); status != http.StatusBadRequest {
		t.Errorf("two Authorization headers answered %d, want 400", status)
	}
	// A batch with a valid token is refused by the body guard.
	if status, resp := post(t, url, "["+body+"]", http.Header{"Authorization": {"Bearer read"}}); status != http.StatusBadRequest || resp.Error == nil {
		t.Errorf("batch answered %d %+v, want 400 with a JSON-RPC error", status, resp.Error)
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("tools ran %d times, want 2", n)
	}
}
