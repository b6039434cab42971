package edge_test

import (
	"context"
	"encoding/json"
	"errors"
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
	if out.Error.Code != "rate_limited" || !out.Error.Retryable || out.Error.RetryAfterMS < 998_000 {
		t.Errorf("error = %+v, want rate_limited, retryable, retry_after_ms about 1000000 less the second the refusal was held", out.Error)
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

// TestConcurrencyCountsUploads holds one request of a tenant whose cap is
// 1 while its body is still arriving, and checks that a second request is
// refused with 429, Retry-After and the contract error as JSON-RPC data,
// without its body being read, whatever its method; another tenant passes.
func TestConcurrencyCountsUploads(t *testing.T) {
	t.Parallel()
	tenants := newLimits(t, limits.Config{Concurrency: 1})
	requestTenant := func(r *http.Request) (string, bool) { return tenantOf(r.Context()) }
	h := auth.RequireBearerToken(verify, nil)(edge.Concurrency(edge.ConcurrencyOptions{Limits: tenants, Tenant: requestTenant, Reject: edge.MCPReject})(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		})))
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	// A stalled upload: headers sent, the body never finished until the end.
	stalled, finish := io.Pipe()
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, stalled)
		req.Header.Set("Authorization", "Bearer read")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	if _, err := finish.Write([]byte(`{"jsonrpc":`)); err != nil {
		t.Fatal(err)
	}

	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_thing","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	} {
		status, hdr, msg := postRaw(t, srv.URL, body, http.Header{"Authorization": {"Bearer read"}})
		var e struct {
			ID    any `json:"id"`
			Error struct {
				Code int64 `json:"code"`
				Data struct {
					Code         string `json:"code"`
					Retryable    bool   `json:"retryable"`
					RetryAfterMS int64  `json:"retry_after_ms"`
				} `json:"data"`
			} `json:"error"`
		}
		if err := json.Unmarshal(msg, &e); err != nil || status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" ||
			e.Error.Data.Code != "rate_limited" || !e.Error.Data.Retryable || e.Error.Data.RetryAfterMS != 1000 || e.ID != nil {
			t.Errorf("%s over the cap answered %d Retry-After %q %s, want 429, 1, rate_limited retryable after 1000 ms, id null", body, status, hdr.Get("Retry-After"), msg)
		}
	}
	// Another tenant is not held back by this one's cap.
	if status, _ := postStatus(t, srv.URL, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, http.Header{"Authorization": {"Bearer write"}}); status != http.StatusNoContent {
		t.Errorf("other tenant answered %d, want to pass", status)
	}
	_ = finish.Close()
	if got := <-done; got != http.StatusNoContent {
		t.Errorf("the stalled request ended with %d", got)
	}
	if status, _ := postStatus(t, srv.URL, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`, http.Header{"Authorization": {"Bearer read"}}); status != http.StatusNoContent {
		t.Errorf("after the stalled request ended its tenant answered %d, want its slot back", status)
	}
}

// postRaw sends body and returns the status, headers and the answer's bytes.
func postRaw(tb testing.TB, url, body string, header http.Header) (int, http.Header, []byte) {
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
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
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
	// The refusal is held a second of the two it names, so it says 1.
	w := do(http.MethodPost, "a")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" || !strings.Contains(w.Body.String(), `"rate_limited"`) {
		t.Errorf("write over the rate answered %d Retry-After %q %s, want 429, 1, rate_limited", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do(http.MethodGet, "a"); w.Code != http.StatusNoContent {
		t.Errorf("read after writes ran out answered %d", w.Code)
	}
	if w := do(http.MethodPost, ""); w.Code != http.StatusNoContent {
		t.Errorf("request without a tenant answered %d, want to pass", w.Code)
	}
}

// stallReader is a request body that sends data, tells sent, and then
// blocks until release is closed before it ends.
type stallReader struct {
	data    []byte
	sent    chan struct{}
	release chan struct{}
}

func (s *stallReader) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	if s.sent != nil {
		close(s.sent)
		s.sent = nil
	}
	<-s.release
	return 0, io.EOF
}

// TestBodiesTakesTheTenantShareFirst: bytes are taken as they arrive, from
// the tenant's share (429 past it) and then from the global budget (503
// past it, with Spent true), and the handler gets every byte.
func TestBodiesTakesTheTenantShareFirst(t *testing.T) {
	t.Parallel()
	// A budget of 1000 bytes, 400 per tenant; a body of up to 300 bytes
	// (each takes its declared size plus one).
	budget, err := limits.NewBodies(1000, 400, 301)
	if err != nil {
		t.Fatal(err)
	}
	h := edge.Bodies(edge.BodiesOptions{
		Budget: budget, MaxBytes: 300,
		Tenant: func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), true },
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case err != nil || int64(len(b)) != r.ContentLength || strings.Trim(string(b), "a") != "":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	do := func(tenant string, body io.Reader, declared int64) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		r.ContentLength = declared
		r.Header.Set("X-Tenant", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	release := make(chan struct{})
	var stalled []chan int
	stall := func(tenant string) {
		sent := make(chan struct{})
		done := make(chan int, 1)
		go func() {
			done <- do(tenant, &stallReader{data: []byte(strings.Repeat("a", 10)), sent: sent, release: release}, 300).Code
		}()
		<-sent
		stalled = append(stalled, done)
	}
	stall("a") // 301 of a's 400, though only 10 bytes arrived
	if w := do("a", strings.NewReader(strings.Repeat("a", 100)), 100); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `"rate_limited"`) || !strings.Contains(w.Body.String(), `"retryable":true`) {
		t.Errorf("a's 100 more past its share answered %d Retry-After %q %s, want 429 rate_limited, retryable", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("b", strings.NewReader(strings.Repeat("a", 300)), 300); w.Code != http.StatusNoContent {
		t.Errorf("b's 300 beside a's stalled upload answered %d, want to pass", w.Code)
	}
	stall("c")
	stall("d") // 903 of 1000 held
	if !budget.Spent() {
		t.Error("less than one body free and Spent is false")
	}
	if w := do("e", strings.NewReader(strings.Repeat("a", 100)), 100); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `"unavailable"`) || !strings.Contains(w.Body.String(), `"retryable":true`) {
		t.Errorf("e's 100 with 97 free answered %d Retry-After %q %s, want 503 unavailable, retryable", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("e", http.NoBody, 0); w.Code != http.StatusNoContent {
		t.Errorf("no body answered %d, want to pass free", w.Code)
	}
	close(release)
	for _, done := range stalled {
		if code := <-done; code != http.StatusInternalServerError && code != http.StatusNoContent {
			t.Errorf("a stalled upload ended with %d", code)
		}
	}
	if budget.Spent() {
		t.Error("Spent after every body was released")
	}
	// A body over MaxBytes reaches the handler as a read error, whether
	// declared or found as it arrives, so the route answers it.
	if w := do("a", strings.NewReader(strings.Repeat("a", 301)), 301); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("301 bytes declared answered %d, want 413", w.Code)
	}
	if w := do("a", io.MultiReader(strings.NewReader(strings.Repeat("a", 301))), -1); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("301 bytes of unknown length answered %d, want 413", w.Code)
	}
	if w := do("a", io.MultiReader(strings.NewReader(strings.Repeat("a", 300))), -1); w.Code != http.StatusNoContent {
		t.Errorf("300 bytes of unknown length answered %d, want to pass", w.Code)
	}
}
