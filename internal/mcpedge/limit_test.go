package mcpedge_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/server"
)

// tenantOf maps the test tokens to tenants: each token is its own tenant.
func tenantOf(ctx context.Context) (string, bool) {
	if info := auth.TokenInfoFromContext(ctx); info != nil {
		return info.UserID, true
	}
	return "", false
}

// callerOf is the principal of a test token: its own tenant and subject.
func callerOf(ctx context.Context) (authn.Principal, bool) {
	tenant, ok := tenantOf(ctx)
	return authn.Principal{Tenant: tenant, Subject: tenant}, ok
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
		mcpedge.Body(1<<20),
		mcpedge.Limits(mcpedge.LimitsOptions{
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

// TestBodiesCountUploads holds one request of a tenant whose upload cap is
// 1 while its body is still arriving, and checks that a second request is
// refused with 429, Retry-After and the contract error as JSON-RPC data,
// without its body being read, whatever its method; another tenant passes,
// and once the body is in the tenant has its upload slot back.
func TestBodiesCountUploads(t *testing.T) {
	t.Parallel()
	tenants := newLimits(t, limits.Config{Concurrency: 1})
	budget, err := limits.NewBodies(8<<20, 2<<20, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	requestTenant := func(r *http.Request) (string, bool) { return tenantOf(r.Context()) }
	h := auth.RequireBearerToken(verify, nil)(server.Bodies(server.BodiesOptions{Budget: budget, Uploads: tenants, Tenant: requestTenant, MaxBytes: 1 << 20, Reject: mcpedge.Reject})(
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
	// The client has sent the first bytes; the server counts the upload once
	// its handler has them, which a loaded machine may take a moment to reach.
	probe := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if status, _ := postStatus(t, srv.URL, probe, http.Header{"Authorization": {"Bearer read"}}); status == http.StatusTooManyRequests {
			break
		}
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
		if err := json.Unmarshal(msg, &e); err != nil || status != http.StatusTooManyRequests || hdr.Get("Retry-After") != "1" || e.Error.Code != -32000 ||
			e.Error.Data.Code != "rate_limited" || !e.Error.Data.Retryable || e.Error.Data.RetryAfterMS != 1000 || e.ID != nil {
			t.Errorf("%s over the cap answered %d Retry-After %q %s, want 429, 1, -32000 rate_limited retryable after 1000 ms, id null", body, status, hdr.Get("Retry-After"), msg)
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
