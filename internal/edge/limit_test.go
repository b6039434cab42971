package edge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/edge"
	"github.com/ticketd/ticketd/internal/limits"
)

// tenantOf maps the test tokens to tenants: each token is its own tenant.
func tenantOf(ctx context.Context) (string, bool) {
	if info := auth.TokenInfoFromContext(ctx); info != nil {
		return info.UserID, true
	}
	return "", false
}

func kindFor(tool string) limits.Kind {
	if tool == "write_thing" {
		return limits.Write
	}
	return limits.Read
}

func newLimits(tb testing.TB, cfg limits.Config) *limits.Tenants {
	tb.Helper()
	l, err := limits.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func TestMCPLimitsRateLimitedToolResult(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	url := guarded(t, s,
		auth.RequireBearerToken(verify, nil),
		edge.MCPBody(edge.MCPBodyOptions{}),
		edge.MCPLimits(edge.MCPLimitsOptions{
			Limits:  newLimits(t, limits.Config{WritesPerSecond: 0.001, Burst: 1}),
			Tenant:  tenantOf,
			KindFor: kindFor,
		}),
	)
	session, _ := connect(t, url, "both")
	call := func(tool string) *mcp.CallToolResult {
		t.Helper()
		res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	if res := call("write_thing"); res.IsError {
		t.Fatalf("first write refused: %+v", res)
	}
	res := call("write_thing")
	var out struct {
		Error struct {
			Code         string `json:"code"`
			Retryable    bool   `json:"retryable"`
			RetryAfterMS int64  `json:"retry_after_ms"`
		} `json:"error"`
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(raw, &out); err != nil || !res.IsError {
		t.Fatalf("second write answered %s (isError %v)", raw, res.IsError)
	}
	if out.Error.Code != "rate_limited" || !out.Error.Retryable || out.Error.RetryAfterMS < 999_000 {
		t.Errorf("error = %+v, want rate_limited, retryable, retry_after_ms about 1000000", out.Error)
	}
	// Reads have their own (here unlimited) bucket, and another tenant its own.
	if res := call("read_thing"); res.IsError {
		t.Errorf("read refused after writes ran out: %+v", res)
	}
	other, _ := connect(t, url, "write")
	if res, err := other.CallTool(t.Context(), &mcp.CallToolParams{Name: "write_thing", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("another tenant's write: %v %+v", err, res)
	}
	if n := s.calls.Load(); n != 3 {
		t.Errorf("tools ran %d times, want 3", n)
	}
}

// TestMCPLimitsConcurrency holds one request of a tenant whose cap is 1 and
// checks a second is refused in the form its method allows.
func TestMCPLimitsConcurrency(t *testing.T) {
	t.Parallel()
	entered, unblock := make(chan struct{}), make(chan struct{})
	held := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _ := edge.CallFrom(r.Context()); c.Tool == "hold" {
			entered <- struct{}{}
			<-unblock
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := auth.RequireBearerToken(verify, nil)(edge.MCPBody(edge.MCPBodyOptions{})(edge.MCPLimits(edge.MCPLimitsOptions{
		Limits: newLimits(t, limits.Config{Concurrency: 1}), Tenant: tenantOf, KindFor: kindFor,
	})(held)))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	hdr := http.Header{"Authorization": {"Bearer read"}}

	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hold","arguments":{}}}`))
		req.Header = hdr.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-entered

	status, resp := post(t, srv.URL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_thing","arguments":{}}}`, hdr)
	if status != http.StatusOK || resp.Result == nil || resp.Result.StructuredContent.Error.Code != "rate_limited" {
		t.Errorf("call over the cap answered %d %+v, want a rate_limited tool result", status, resp)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`))
	req.Header = hdr.Clone()
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Errorf("tools/list over the cap answered %d Retry-After %q, want 429 with 1", r.StatusCode, r.Header.Get("Retry-After"))
	}
	// Another tenant is not held back by this one's cap.
	if status, _ := postStatus(t, srv.URL, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, http.Header{"Authorization": {"Bearer write"}}); status != http.StatusNoContent {
		t.Errorf("other tenant answered %d, want to pass", status)
	}
	close(unblock)
	if got := <-done; got != http.StatusNoContent {
		t.Errorf("held request ended with %d", got)
	}
}

// postStatus sends body and returns the status only.
func postStatus(tb testing.TB, url, body string, header http.Header) (int, http.Header) {
	tb.Helper()
	req, err := http.NewRequestWithContext(tb.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header = header.Clone()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

func TestLimitREST(t *testing.T) {
	t.Parallel()
	h := edge.Limit(edge.LimitOptions{
		Limits: newLimits(t, limits.Config{WritesPerSecond: 0.5, ReadsPerSecond: 100}),
		Tenant: func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), r.Header.Get("X-Tenant") != "" },
	})(reached)
	do := func(method, tenant string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/api/v1/tickets", nil)
		if tenant != "" {
			r.Header.Set("X-Tenant", tenant)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// Burst: 2 × 0.5/s = 1 write.
	if w := do(http.MethodPost, "a"); w.Code != http.StatusNoContent {
		t.Fatalf("first write answered %d", w.Code)
	}
	w := do(http.MethodPost, "a")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "2" || !strings.Contains(w.Body.String(), `"rate_limited"`) {
		t.Errorf("write over the rate answered %d Retry-After %q %s, want 429, 2, rate_limited", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do(http.MethodGet, "a"); w.Code != http.StatusNoContent {
		t.Errorf("read after writes ran out answered %d", w.Code)
	}
	if w := do(http.MethodPost, ""); w.Code != http.StatusNoContent {
		t.Errorf("request without a tenant answered %d, want to pass", w.Code)
	}
}

func TestBodiesBoundsHeldBytes(t *testing.T) {
	t.Parallel()
	budget, err := limits.NewBytes(100)
	if err != nil {
		t.Fatal(err)
	}
	entered, unblock := make(chan struct{}), make(chan struct{})
	h := edge.Bodies(edge.BodiesOptions{Budget: budget, MaxBytes: 80})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-unblock
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	do := func(body io.Reader, hold bool) int {
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		if hold {
			r.Header.Set("X-Hold", "1")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	done := make(chan int)
	go func() { done <- do(strings.NewReader(strings.Repeat("a", 60)), true) }()
	<-entered
	if code := do(strings.NewReader(strings.Repeat("a", 50)), false); code != http.StatusServiceUnavailable {
		t.Errorf("60+50 of 100 bytes answered %d, want 503", code)
	}
	if code := do(strings.NewReader(strings.Repeat("a", 40)), false); code != http.StatusNoContent {
		t.Errorf("60+40 of 100 bytes answered %d, want to pass", code)
	}
	// A body of unknown length reserves MaxBytes (80), which does not fit.
	if code := do(io.MultiReader(strings.NewReader("a")), false); code != http.StatusServiceUnavailable {
		t.Errorf("unknown length beside 60 held answered %d, want 503", code)
	}
	if code := do(http.NoBody, false); code != http.StatusNoContent {
		t.Errorf("no body answered %d, want to pass free", code)
	}
	close(unblock)
	if code := <-done; code != http.StatusNoContent {
		t.Errorf("held request ended with %d", code)
	}
	// Everything was released: the full budget fits again, and a body over
	// MaxBytes is cut off.
	if code := do(strings.NewReader(strings.Repeat("a", 80)), false); code != http.StatusNoContent {
		t.Errorf("80 bytes after release answered %d", code)
	}
	if code := do(io.MultiReader(strings.NewReader(strings.Repeat("a", 81))), false); code != http.StatusRequestEntityTooLarge {
		t.Errorf("81 bytes of unknown length answered %d, want the read cut off", code)
	}
}
