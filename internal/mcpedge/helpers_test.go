package mcpedge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/server/servertest"
)

const (
	scopeRead  = "tickets:read"
	scopeWrite = "tickets:write"
)

// scopeFor is the tool-to-scope table of the test server.
func scopeFor(tool string) (string, bool) {
	switch tool {
	case "read_thing":
		return scopeRead, true
	case "write_thing":
		return scopeWrite, true
	}
	return "", false
}

// testServer is a tiny MCP server whose tools record the arguments they ran
// with. Both input schemas carry a default, the case where the SDK panics
// on "arguments": null.
type testServer struct {
	*mcp.Server
	calls atomic.Int64
	last  atomic.Value // the last arguments a tool ran with, as JSON
}

func newTestServer(tb testing.TB, opts *mcp.ServerOptions) *testServer {
	tb.Helper()
	s := &testServer{Server: mcp.NewServer(&mcp.Implementation{Name: "edge-test", Version: "1"}, opts)}
	schema := &jsonschema.Schema{
		Type: "object",
		Properties: map[string]*jsonschema.Schema{
			"text":     {Type: "string"},
			"nested":   {Type: "object"},
			"priority": {Type: "string", Default: json.RawMessage(`"normal"`)},
		},
	}
	handler := func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		s.calls.Add(1)
		b, err := json.Marshal(in)
		if err != nil {
			return nil, nil, err
		}
		s.last.Store(string(b))
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	}
	mcp.AddTool(s.Server, &mcp.Tool{Name: "read_thing", InputSchema: schema}, handler)
	mcp.AddTool(s.Server, &mcp.Tool{Name: "write_thing", InputSchema: schema}, handler)
	return s
}

// handler serves s statelessly over Streamable HTTP, as ticketd does.
func (s *testServer) handler() http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.Server }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// tokens maps a bearer token to its scopes; verify is the TokenVerifier
// over it.
var tokens = map[string][]string{
	"read":  {scopeRead},
	"write": {scopeWrite},
	"both":  {scopeRead, scopeWrite},
	"none":  nil,
}

func verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	scopes, ok := tokens[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{UserID: token, Scopes: scopes, Expiration: time.Now().Add(time.Hour)}, nil
}

// tokenScopes returns the scopes of the test token auth.RequireBearerToken
// verified, as StepUpOptions.Scopes.
func tokenScopes(ctx context.Context) []string {
	if info := auth.TokenInfoFromContext(ctx); info != nil {
		return info.Scopes
	}
	return nil
}

// requestScopes returns the scopes of the test token verified for req, as
// FilterTools' scopes.
func requestScopes(_ context.Context, req mcp.Request) []string {
	if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
		return extra.TokenInfo.Scopes
	}
	return nil
}

// bearer sends the test token (servertest.Bearer) and records the last
// response's WWW-Authenticate header and status.
type bearer struct {
	next      http.RoundTripper
	challenge atomic.Value
	status    atomic.Int64
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.next.RoundTrip(r)
	if err == nil {
		b.challenge.Store(resp.Header.Get("WWW-Authenticate"))
		b.status.Store(int64(resp.StatusCode))
	}
	return resp, err
}

// connect opens a go-sdk client session to url with token.
func connect(tb testing.TB, url, token string) (*mcp.ClientSession, *bearer) {
	tb.Helper()
	rt := &bearer{next: servertest.Bearer(token, http.DefaultTransport)}
	client := mcp.NewClient(&mcp.Implementation{Name: "edge-test-client", Version: "1"}, nil)
	session, err := client.Connect(tb.Context(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}}, nil)
	if err != nil {
		tb.Fatalf("connect: %v", err)
	}
	tb.Cleanup(func() { _ = session.Close() })
	return session, rt
}

// rpcResponse is a JSON-RPC response as the edge writes it.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError           bool `json:"isError"`
		StructuredContent struct {
			Error struct {
				Code      string `json:"code"`
				Message   string `json:"message"`
				Retryable bool   `json:"retryable"`
			} `json:"error"`
		} `json:"structuredContent"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends body to url as an MCP client would and decodes the answer.
func post(tb testing.TB, url, body string, header http.Header) (int, rpcResponse) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("read response: %v", err)
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		// The SDK streams its answers; the one message is the data line.
		for line := range strings.Lines(string(raw)) {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				raw = []byte(data)
			}
		}
	}
	var out rpcResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		tb.Fatalf("response is not one JSON-RPC message (status %d): %v\n%s", resp.StatusCode, err, raw)
	}
	return resp.StatusCode, out
}

// guarded serves s behind mws, outermost first, as ticketd serves /mcp.
func guarded(tb testing.TB, s *testServer, mws ...func(http.Handler) http.Handler) string {
	tb.Helper()
	h := s.handler()
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// rpcCode returns err's JSON-RPC error code, failing if it has none.
func rpcCode(tb testing.TB, err error) int64 {
	tb.Helper()
	var jerr *jsonrpc.Error
	if !errors.As(err, &jerr) {
		tb.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return jerr.Code
}
