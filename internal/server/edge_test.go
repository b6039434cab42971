package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// legacy is a protocol version before 2026-07-28: the SDK serves batches
// for it, so it is the version the batch refusal matters most for.
const legacy = "2025-03-26"

// rpc sends one raw JSON-RPC body to /mcp with the given protocol version
// and extra headers, and returns the status, headers and the JSON-RPC
// message of the answer (unwrapped from an event stream if need be).
func rpc(t *testing.T, env *servertest.Env, token, version, body string, extra http.Header) (int, http.Header, map[string]json.RawMessage) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, vs := range extra {
		req.Header.Del(k)
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, text := do(t, req)
	for _, line := range strings.Split(text, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			text = data
		}
	}
	var msg map[string]json.RawMessage
	_ = json.Unmarshal([]byte(text), &msg) // a plain-text answer leaves msg nil, which the caller checks
	return resp.StatusCode, resp.Header, msg
}

// toolErrorCode returns the contract code of an isError tools/call result.
func toolErrorCode(t *testing.T, msg map[string]json.RawMessage) string {
	t.Helper()
	var res struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Error struct {
				Code         string `json:"code"`
				Message      string `json:"message"`
				RetryAfterMS *int64 `json:"retry_after_ms"`
			} `json:"error"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(msg["result"], &res); err != nil || !res.IsError {
		t.Fatalf("want an isError tool result, got %v (%s)", err, msg["result"])
	}
	return res.StructuredContent.Error.Code
}

func callBody(tool, args string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

func createArgs() string {
	return `{"operation_id":"` + uuid.NewString() + `","project_id":"support","title":"Printer on fire"}`
}

// Finding 1: batches are refused on /mcp for every protocol version, before
// any of their calls runs.
func TestBatchesAreRefusedForEveryVersion(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	batch := "[" + callBody(mcptools.ToolCreateTicket, createArgs()) + "," + callBody(mcptools.ToolListTickets, `{}`) + "]"
	for _, version := range []string{"", legacy, "2025-06-18", "2026-07-28"} {
		status, _, msg := rpc(t, env, tok, version, batch, nil)
		if status != http.StatusBadRequest || msg["error"] == nil {
			t.Errorf("batch on protocol %q: %d %v, want 400 with a JSON-RPC error", version, status, msg)
		}
	}
	if n := env.CountTickets(t, "acme"); n != 0 {
		t.Errorf("a refused batch created %d tickets", n)
	}
}

// Finding 3: "arguments": null is invalid_input, not a panic answered as a
// retryable internal error, and it logs no stack.
func TestNullArgumentsAreInvalidInput(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	for _, tool := range []string{mcptools.ToolCreateTicket, mcptools.ToolPreviewTicket, mcptools.ToolListTickets} {
		status, _, msg := rpc(t, env, tok, legacy, callBody(tool, "null"), nil)
		if status != http.StatusOK || toolErrorCode(t, msg) != "invalid_input" {
			t.Errorf("%s with null arguments: %d %s, want 200 invalid_input", tool, status, msg["result"])
		}
	}
	if strings.Contains(logs.String(), "panic") || strings.Contains(logs.String(), "goroutine") {
		t.Errorf("null arguments logged a panic:\n%s", logs.String())
	}
}

// Finding 4: duplicate keys and invalid UTF-8 are refused over MCP, so a
// gateway reading the first key cannot be bypassed and nothing is stored
// as U+FFFD.
func TestDuplicateKeysAndInvalidUTF8AreRefused(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)

	smuggled := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_projects","name":"create_ticket","arguments":` + createArgs() + `}}`
	if status, _, msg := rpc(t, env, tok, legacy, smuggled, nil); status != http.StatusOK || toolErrorCode(t, msg) != "invalid_input" {
		t.Errorf("duplicate tool name: %d %v, want invalid_input", status, msg)
	}
	dupArg := callBody(mcptools.ToolCreateTicket, `{"operation_id":"`+uuid.NewString()+`","project_id":"support","title":"a","title":"b"}`)
	if status, _, msg := rpc(t, env, tok, legacy, dupArg, nil); status != http.StatusOK || toolErrorCode(t, msg) != "invalid_input" {
		t.Errorf("duplicate argument: %d %v, want invalid_input", status, msg)
	}
	badUTF8 := callBody(mcptools.ToolCreateTicket, `{"operation_id":"`+uuid.NewString()+`","project_id":"support","title":"caf`+"\xe9"+`"}`)
	if status, _, msg := rpc(t, env, tok, legacy, badUTF8, nil); status != http.StatusOK || toolErrorCode(t, msg) != "invalid_input" {
		t.Errorf("invalid UTF-8: %d %v, want invalid_input", status, msg)
	}
	if n := env.CountTickets(t, "acme"); n != 0 {
		t.Errorf("refused input created %d tickets", n)
	}
}

// Finding 5: an evil Origin or Host is refused with 403 before anything
// runs, /mcp and /api/v1 alike; probes and metadata are not Host-checked.
func TestOriginAndHostAreChecked(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{AllowedOrigins: []string{"https://console.example"}}})
	tok := env.Token(t, "acme", authn.ScopeRead)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for name, h := range map[string]http.Header{
		"evil Origin":     {"Origin": {"https://evil.example"}},
		"null Origin":     {"Origin": {"null"}},
		"two Origins":     {"Origin": {env.URL, "https://evil.example"}},
		"rebinding Host":  {"Host": {"evil.example"}},
		"rebinding both":  {"Host": {"evil.example:80"}, "Origin": {"http://evil.example"}},
		"evil via header": {"Origin": {"https://console.example.evil"}},
	} {
		req, _ := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(list))
		req.Header = h.Clone()
		if host := h.Get("Host"); host != "" {
			req.Host = host
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if resp, body := do(t, req); resp.StatusCode != http.StatusForbidden {
			t.Errorf("/mcp with %s: %d %s, want 403", name, resp.StatusCode, body)
		}
		api, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
		api.Header = req.Header.Clone()
		api.Host = req.Host
		if resp, body := do(t, api); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `"code":"forbidden"`) {
			t.Errorf("/api/v1 with %s: %d %s, want a 403 problem", name, resp.StatusCode, body)
		}
	}
	for _, origin := range []string{env.URL, "https://console.example"} {
		if status, _, msg := rpc(t, env, tok, legacy, list, http.Header{"Origin": {origin}}); status != http.StatusOK || msg["result"] == nil {
			t.Errorf("allowed Origin %s: %d %v", origin, status, msg)
		}
	}
	for _, path := range []string{server.HealthPath, server.ReadyPath, server.MCPResourceMetadataPath} {
		req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
		req.Host = "10.0.0.7:8080"
		if resp, _ := do(t, req); resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s by address: %d, want 200", path, resp.StatusCode)
		}
	}
}

// Finding 6: scopes are visible to OAuth clients. The go-sdk client sees
// a 403 insufficient_scope step-up for a tool its token lacks (and its
// session survives), tools/list shows only callable tools, 401 challenges
// name the scopes, and a token with no ticketd scope is refused.
func TestScopesOverHTTP(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")

	var challenge string
	var status int
	var mu sync.Mutex
	client := mcp.NewClient(&mcp.Implementation{Name: "edge-test", Version: "v0"}, nil)
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := servertest.Bearer(env.Token(t, "acme", authn.ScopeRead), http.DefaultTransport).RoundTrip(r)
		if err == nil && r.Method == http.MethodPost {
			mu.Lock()
			status, challenge = resp.StatusCode, resp.Header.Get("WWW-Authenticate")
			mu.Unlock()
		}
		return resp, err
	})
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: env.Endpoint, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == mcptools.ToolCreateTicket {
			t.Errorf("a read-only token sees %s in tools/list", tool.Name)
		}
	}
	_, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcptools.ToolCreateTicket, Arguments: json.RawMessage(createArgs())})
	var rpcErr *jsonrpc.Error
	mu.Lock()
	if !errors.As(err, &rpcErr) || status != http.StatusForbidden ||
		!strings.Contains(challenge, `error="insufficient_scope"`) || !strings.Contains(challenge, `scope="tickets:read tickets:write"`) ||
		!strings.Contains(challenge, `resource_metadata="`+env.URL+server.MCPResourceMetadataPath+`"`) {
		t.Errorf("create_ticket with a read token: %v, status %d, challenge %q; want a JSON-RPC error on a 403 insufficient_scope step-up", err, status, challenge)
	}
	mu.Unlock()
	if _, err := servertest.TryCall(cs, mcptools.ToolListProjects, map[string]any{}); err != nil {
		t.Errorf("the session did not survive the step-up refusal: %v", err)
	}
	if n := env.CountTickets(t, "acme"); n != 0 {
		t.Errorf("a refused call created %d tickets", n)
	}

	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	_, h, _ := rpc(t, env, "", legacy, list, nil)
	if got := h.Get("WWW-Authenticate"); !strings.Contains(got, `scope="tickets:read tickets:write"`) || !strings.Contains(got, "resource_metadata=") {
		t.Errorf("401 challenge = %q, want the scopes and the metadata URL", got)
	}
	noScope := env.Token(t, "acme", "profile")
	if status, h, msg := rpc(t, env, noScope, legacy, list, nil); status != http.StatusForbidden || msg["error"] == nil ||
		!strings.Contains(h.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
		t.Errorf("token without ticketd scopes on /mcp: %d %q %v, want 403 insufficient_scope", status, h.Get("WWW-Authenticate"), msg)
	}
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
	req.Header.Set("Authorization", "Bearer "+noScope)
	if resp, body := do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("token without ticketd scopes on /api/v1: %d %s, want 403", resp.StatusCode, body)
	}
	// An admin token grants read and write, so the step-up does not refuse it.
	if status, _, msg := rpc(t, env, env.Token(t, "acme", authn.ScopeAdmin), legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil); status != http.StatusOK || msg["result"] == nil {
		t.Errorf("create_ticket with an admin token: %d %v", status, msg)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Finding 7: undeclared methods are -32601; two Authorization headers are
// refused; a token just past exp is accepted by /mcp and /api/v1 alike, and
// one past the leeway by neither; validation messages keep the limit.
func TestProtocolAndTokenRules(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	for _, method := range []string{"resources/subscribe", "logging/setLevel", "sampling/createMessage"} {
		status, _, msg := rpc(t, env, tok, legacy, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`, nil)
		var e struct {
			Code int64 `json:"code"`
		}
		if err := json.Unmarshal(msg["error"], &e); err != nil || e.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("%s: %d %v, want -32601", method, status, msg)
		}
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if status, _, _ := rpc(t, env, "", legacy, list, http.Header{"Authorization": {"Bearer " + tok, "Bearer x"}}); status != http.StatusBadRequest {
		t.Errorf("two Authorization headers on /mcp: %d, want 400", status)
	}

	expiredBy := func(d time.Duration) string {
		return env.Mint(t, authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: "acme", Subject: "agent",
			Scopes: []string{authn.ScopeRead}, TTL: time.Minute}, time.Now().Add(-time.Minute-d))
	}
	for _, tc := range []struct {
		token string
		want  bool
	}{{expiredBy(10 * time.Second), true}, {expiredBy(2 * time.Minute), false}} {
		mcpStatus, _, _ := rpc(t, env, tc.token, legacy, list, nil)
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, _ := do(t, req)
		if (mcpStatus == http.StatusOK) != tc.want || (resp.StatusCode == http.StatusOK) != tc.want {
			t.Errorf("expired token (accept=%v): /mcp %d, /api/v1 %d; want both the same", tc.want, mcpStatus, resp.StatusCode)
		}
	}

	long := strings.Repeat("x", 5000)
	status, _, msg := rpc(t, env, tok, legacy, callBody(mcptools.ToolCreateTicket, `{"operation_id":"`+uuid.NewString()+`","project_id":"support","title":"`+long+`"}`), nil)
	var res struct {
		StructuredContent struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		} `json:"structuredContent"`
	}
	_ = json.Unmarshal(msg["result"], &res) // checked through the message below
	if m := res.StructuredContent.Error.Message; status != http.StatusOK || !strings.Contains(m, "200") || len(m) > 1000 {
		t.Errorf("title of 5000 characters: %d %q, want a short message naming the limit 200", status, m)
	}
}

// Finding 2: a tenant over its write rate gets rate_limited with
// retry_after_ms (MCP) or 429 with Retry-After (REST), and another tenant
// is not affected.
func TestTenantRateLimits(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{Limits: limits.Config{WritesPerSecond: 0.01, ReadsPerSecond: 0.01, Burst: 1}}})
	env.SeedProject(t, "acme")
	env.SeedProject(t, "other")
	a := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	if status, _, msg := rpc(t, env, a, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil); status != http.StatusOK || msg["result"] == nil {
		t.Fatalf("first create: %d %v", status, msg)
	}
	status, _, msg := rpc(t, env, a, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil)
	if status != http.StatusOK || toolErrorCode(t, msg) != "rate_limited" || !strings.Contains(string(msg["result"]), "retry_after_ms") {
		t.Errorf("second create within the burst: %d %s, want rate_limited with retry_after_ms", status, msg["result"])
	}
	b := env.Token(t, "other", authn.ScopeRead, authn.ScopeWrite)
	if status, _, msg := rpc(t, env, b, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil); status != http.StatusOK || msg["result"] == nil || strings.Contains(string(msg["result"]), "rate_limited") {
		t.Errorf("another tenant's create: %d %s, want it served", status, msg["result"])
	}
	get := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
		req.Header.Set("Authorization", "Bearer "+a)
		resp, _ := do(t, req)
		return resp
	}
	get()
	if resp := get(); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("REST read over the rate: %d Retry-After %q, want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	for _, path := range []string{server.HealthPath, server.ReadyPath} {
		if resp, _ := get2(t, env.URL+path); resp.StatusCode != http.StatusOK {
			t.Errorf("%s while a tenant is limited: %d", path, resp.StatusCode)
		}
	}
}

func get2(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	return do(t, req)
}

// --read-only serves the read tools only and refuses REST writes.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{ReadOnly: true}})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeAdmin)
	cs := env.Connect(t, tok)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == mcptools.ToolCreateTicket {
			t.Errorf("a read-only server lists %s", tool.Name)
		}
	}
	if res, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, json.RawMessage(createArgs())); err == nil && !res.IsError {
		t.Errorf("a read-only server ran create_ticket")
	}
	req, _ := http.NewRequest(http.MethodPost, env.URL+"/api/v1/tickets", strings.NewReader(`{"project_id":"support","title":"x"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	if resp, body := do(t, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("REST write on a read-only server: %d %s, want 403", resp.StatusCode, body)
	}
	if n := env.CountTickets(t, "acme"); n != 0 {
		t.Errorf("a read-only server created %d tickets", n)
	}
	// It advertises the read scope only: in its metadata and its 401s.
	resp, body := get2(t, env.URL+server.MCPResourceMetadataPath)
	var prm struct {
		ScopesSupported []string `json:"scopes_supported"`
	}
	if err := json.Unmarshal([]byte(body), &prm); err != nil || strings.Join(prm.ScopesSupported, " ") != authn.ScopeRead {
		t.Errorf("read-only metadata: %d scopes_supported %v, want [%s]", resp.StatusCode, prm.ScopesSupported, authn.ScopeRead)
	}
	status, h, _ := rpc(t, env, "", legacy, callBody(mcptools.ToolListProjects, `{}`), nil)
	if c := h.Get("WWW-Authenticate"); status != http.StatusUnauthorized || !strings.Contains(c, `scope="tickets:read"`) {
		t.Errorf("read-only 401: %d challenge %q, want scope=\"tickets:read\"", status, c)
	}
}
