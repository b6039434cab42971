package mcpedge_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/mcpedge"
)

const metadataURL = "https://tickets.example/.well-known/oauth-protected-resource/mcp"

// scopedServer serves a test server as ticketd's /mcp will be: bearer
// auth, the body guard, step-up, and tools/list filtered by scope.
func scopedServer(t *testing.T) (*testServer, string) {
	t.Helper()
	s := newTestServer(t, &mcp.ServerOptions{SetCacheable: mcpedge.PrivateToolList})
	s.AddReceivingMiddleware(mcpedge.FilterTools(scopeFor, requestScopes))
	url := guarded(t, s,
		auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: metadataURL}),
		mcpedge.Body(1<<20),
		mcpedge.StepUp(mcpedge.StepUpOptions{ScopeFor: scopeFor, Scopes: tokenScopes, ResourceMetadataURL: metadataURL}),
	)
	return s, url
}

func TestStepUpRefusesMissingScopeAndKeepsTheSession(t *testing.T) {
	t.Parallel()
	s, url := scopedServer(t)
	session, rt := connect(t, url, "read")

	_, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "write_thing", Arguments: map[string]any{}})
	if err == nil {
		t.Fatal("write_thing with a read-only token succeeded")
	}
	if code := rpcCode(t, err); code != jsonrpc.CodeInvalidRequest || !strings.Contains(err.Error(), "needs scope tickets:write") {
		t.Errorf("error = %v (code %d), want the step-up refusal naming tickets:write", err, code)
	}
	// Granted plus needed (docs/contract.md#mcp-tools): asking for tickets:write alone
	// would lose tickets:read.
	want := `Bearer error="insufficient_scope", scope="tickets:read tickets:write", resource_metadata="` + metadataURL + `"`
	if got := rt.challenge.Load(); rt.status.Load() != http.StatusForbidden || got != want {
		t.Errorf("answer = %d with WWW-Authenticate %q, want 403 with %q", rt.status.Load(), got, want)
	}
	if n := s.calls.Load(); n != 0 {
		t.Fatalf("refused tool ran (%d calls)", n)
	}

	// The session survives the 403: the next call in scope works.
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_thing", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("read_thing after the refusal: %v %+v", err, res)
	}
	if n := s.calls.Load(); n != 1 {
		t.Errorf("tools ran %d times, want 1", n)
	}
}

func TestStepUpPassesWhatItDoesNotGuard(t *testing.T) {
	t.Parallel()
	s, url := scopedServer(t)
	both, _ := connect(t, url, "both")
	for _, tool := range []string{"read_thing", "write_thing"} {
		if res, err := both.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Errorf("%s with both scopes: %v %+v", tool, err, res)
		}
	}
	// An unknown tool is the SDK's to answer, not a step-up.
	none, rt := connect(t, url, "none")
	if _, err := none.CallTool(t.Context(), &mcp.CallToolParams{Name: "no_such_tool", Arguments: map[string]any{}}); err == nil {
		t.Error("unknown tool succeeded")
	}
	if rt.status.Load() == http.StatusForbidden {
		t.Error("unknown tool answered 403, want the SDK's own answer")
	}
	if n := s.calls.Load(); n != 2 {
		t.Errorf("tools ran %d times, want 2", n)
	}
}

func TestFilterToolsShowsOnlyCallableTools(t *testing.T) {
	t.Parallel()
	_, url := scopedServer(t)
	for token, want := range map[string][]string{
		"read":  {"read_thing"},
		"write": {"write_thing"},
		"both":  {"read_thing", "write_thing"},
		"none":  {},
	} {
		t.Run(token, func(t *testing.T) {
			t.Parallel()
			session, _ := connect(t, url, token)
			res, err := session.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			var got []string
			for _, tool := range res.Tools {
				got = append(got, tool.Name)
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("tools = %v, want %v", got, want)
			}
			if res.CacheScope != "private" || res.TTLMs != 0 {
				t.Errorf("cacheScope %q ttlMs %d, want private and 0: the list depends on the token", res.CacheScope, res.TTLMs)
			}
		})
	}
	// The filter replaced slices only: a full list is still whole afterwards.
	session, _ := connect(t, url, "both")
	if res, err := session.ListTools(t.Context(), nil); err != nil || len(res.Tools) != 2 {
		t.Errorf("full list after filtered lists: %v, %d tools", err, len(res.Tools))
	}
}
