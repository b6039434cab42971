package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// The fair-share tests (docs/contract.md#fair-share) attack as one tenant and check that
// another tenant's calls are answered, not refused. They assert no timings:
// how much slower the other tenant gets is measured by
// scripts/edge-measure.sh.

// defaultRates are the documented default rate limits (docs/architecture.md#the-edge-in-the-order-it-is-wired), which
// a zero limits.Config leaves off.
var defaultRates = limits.Config{WritesPerSecond: 50, ReadsPerSecond: 200}

// eventually polls cond every 20 ms until it holds or 30 s pass (a loaded
// machine running -race is slow; the deadline only stops a hung test).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stallUpload opens a raw connection that sends a POST to path declaring a
// body of the largest size, sends sent bytes of it and then stalls, as a
// slow or hostile uploader does. The connection closes when the test ends
// (or when the returned func is called).
func stallUpload(t *testing.T, env *servertest.Env, path, token string, sent int) func() {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(env.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	var closeOnce sync.Once
	closeConn := func() { closeOnce.Do(func() { _ = conn.Close() }) }
	t.Cleanup(closeConn)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nIdempotency-Key: %s\r\nContent-Length: %d\r\n\r\n",
		path, strings.TrimPrefix(env.URL, "http://"), token, uuid.NewString(), tickets.MaxInputBytes)
	if _, err := conn.Write([]byte(head + strings.Repeat(" ", sent))); err != nil {
		t.Fatal(err)
	}
	return closeConn
}

// stallUntil starts stalled uploads with stall, one at a time, until done
// holds: after each it polls done for two seconds before it starts the
// next, most of them in all (then it fails, naming what). It returns the
// closers of the uploads it started.
func stallUntil(t *testing.T, most int, what string, stall func() func(), done func() bool) []func() {
	t.Helper()
	var release []func()
	for range most {
		release = append(release, stall())
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if done() {
				return release
			}
		}
	}
	t.Fatalf("gave up waiting for %s after %d stalled uploads", what, most)
	return nil
}

// restCreate posts a ticket over REST as token and returns the status and
// the answer.
func restCreate(t *testing.T, env *servertest.Env, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/tickets", strings.NewReader(`{"project_id":"support","title":"Printer on fire"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", uuid.NewString())
	return do(t, req)
}

// wantAnswered calls tool as cs and fails unless the call was answered
// with a result that is not an error.
func wantAnswered(t *testing.T, cs *mcp.ClientSession, tool string, args any) {
	t.Helper()
	res, err := servertest.TryCall(cs, tool, args)
	if err != nil {
		t.Fatalf("%s: refused: %v", tool, err)
	}
	if res.IsError {
		b, _ := json.Marshal(res.StructuredContent)
		t.Fatalf("%s: answered with an error: %s", tool, b)
	}
}

// floodCreate sends one create_ticket as a flooding caller does, safe to
// call from many goroutines: a failure is a status of 0.
func floodCreate(env *servertest.Env, token string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(callBody(mcptools.ToolCreateTicket, createArgs())))
	if err != nil {
		return 0, ""
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacy)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a cut-off answer counts as neither served nor refused
	return resp.StatusCode, string(b)
}

func createTicketArgs() map[string]any {
	return map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "Printer on fire"}
}

// TestStalledBodiesSlowOnlyTheirTenant: tenant A's stalled uploads fill
// A's share of the body budget (A is refused, 429), and tenant B's MCP
// session, calls and REST writes are all answered while they stall; the
// server stays ready. Only when several tenants together spend the budget
// do calls get 503, whose retryable agrees with its Retry-After, and
// /readyz says 503 until the bytes are released.
func TestStalledBodiesSlowOnlyTheirTenant(t *testing.T) {
	t.Parallel()
	// 1 MiB in all, a quarter (one full body) per tenant.
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{BodyBudget: 4 * tickets.MaxInputBytes, Limits: defaultRates}})
	for _, tenant := range []string{"a", "b"} {
		env.SeedProject(t, tenant)
	}
	tokA := env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite)
	tokB := env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite)

	// A's uploads go one at a time, each given a moment to be read: uploads
	// started together race for the tenant's share, and the one the share
	// refuses last may leave it empty.
	stallUntil(t, 3, "tenant A's own calls to be refused while its uploads stall", func() func() {
		return stallUpload(t, env, server.MCPPath, tokA, 200<<10)
	}, func() bool {
		status, hdr, _ := rpc(t, env, tokA, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil)
		return status == http.StatusTooManyRequests && hdr.Get("Retry-After") != ""
	})

	cs := env.Connect(t, tokB) // initialize (or server/discover) included
	wantAnswered(t, cs, mcptools.ToolListProjects, map[string]any{})
	wantAnswered(t, cs, mcptools.ToolCreateTicket, createTicketArgs())
	if resp, body := restCreate(t, env, tokB); resp.StatusCode != http.StatusCreated {
		t.Errorf("tenant B's REST create while A's uploads stall: %d %s, want 201", resp.StatusCode, body)
	}
	if resp, _ := get2(t, env.URL+server.ReadyPath); resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz while one tenant's uploads stall: %d, want 200 (one tenant cannot spend the shared budget)", resp.StatusCode)
	}

	// More tenants stall a full share each (three, unless one of them is
	// read late) until the budget every tenant shares is spent.
	var (
		status int
		hdr    http.Header
		msg    map[string]json.RawMessage
	)
	others := 0
	release := stallUntil(t, 8, "tenant B's small call to find the shared budget spent", func() func() {
		others++
		return stallUpload(t, env, server.MCPPath, env.Token(t, fmt.Sprintf("other-%d", others), authn.ScopeRead, authn.ScopeWrite), 200<<10)
	}, func() bool {
		status, hdr, msg = rpc(t, env, tokB, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil)
		return status == http.StatusServiceUnavailable
	})
	// /readyz says so while less than one full body is free.
	if resp, _ := get2(t, env.URL+server.ReadyPath); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz with the shared body budget spent: %d, want 503", resp.StatusCode)
	}
	var refusal struct {
		Data struct {
			Code         string `json:"code"`
			Retryable    bool   `json:"retryable"`
			RetryAfterMS int64  `json:"retry_after_ms"`
		} `json:"data"`
	}
	_ = json.Unmarshal(msg["error"], &refusal) // checked field by field below
	if hdr.Get("Retry-After") != "1" || refusal.Data.Code != "unavailable" || !refusal.Data.Retryable || refusal.Data.RetryAfterMS != 1000 {
		t.Errorf("MCP call with the shared budget spent: %d Retry-After %q %s, want 503, 1, unavailable, retryable, retry_after_ms 1000", status, hdr.Get("Retry-After"), msg["error"])
	}
	resp, body := restCreate(t, env, tokB)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, `"retryable":true`) {
		t.Errorf("REST create with the shared budget spent: %d Retry-After %q %s, want 503 with Retry-After and retryable true", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for _, r := range release {
		r()
	}
	eventually(t, "/readyz to recover once the uploads are gone", func() bool {
		resp, _ := get2(t, env.URL+server.ReadyPath)
		return resp.StatusCode == http.StatusOK
	})
	wantAnswered(t, cs, mcptools.ToolCreateTicket, createTicketArgs())
}

// TestHostileListsSlowOnlyTheirTenant: while tenant A runs many large
// list_tickets at once, tenant B's lists and creates are answered.
func TestHostileListsSlowOnlyTheirTenant(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "a")
	env.SeedProject(t, "b")
	desc := strings.Repeat("d", 20000)
	for range 15 {
		if _, err := env.Service.CreateTicket(context.Background(), tickets.Caller{Tenant: "a", Subject: "seed"}, ticketstest.OpID(uuid.NewString()),
			tickets.NewTicket{ProjectID: "support", Title: "large", Description: desc}); err != nil {
			t.Fatal(err)
		}
	}
	tokA := env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite)
	cs := env.Connect(t, env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite))

	stop := make(chan struct{})
	var started, pages atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range 12 {
		hostile := env.Connect(t, tokA)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				started.Add(1)
				res, err := servertest.TryCall(hostile, mcptools.ToolListTickets, map[string]any{"limit": 100})
				if err == nil && !res.IsError {
					pages.Add(1)
				} else {
					failed.Store(fmt.Sprint(err, res))
				}
			}
		})
	}
	eventually(t, "tenant A's 12 lists to be sent", func() bool { return started.Load() >= 12 })
	for range 5 {
		wantAnswered(t, cs, mcptools.ToolListTickets, map[string]any{})
		wantAnswered(t, cs, mcptools.ToolCreateTicket, createTicketArgs())
	}
	close(stop)
	wg.Wait()
	// The attack was real: A's large pages were being built meanwhile.
	if pages.Load() == 0 {
		t.Errorf("none of tenant A's lists returned a page, so nothing was attacking (last failure: %v)", failed.Load())
	}
}

// TestWriteFloodLeavesOtherTenantsAnswered: tenant A floods creates from
// many callers that ignore every refusal, far more at once than there are
// work slots; A's calls wait their turn (refused only by its rate bucket,
// if the server outpaces it), and tenant B's creates, waiting in a queue of
// their own, are all answered. Over PostgreSQL and SQLite.
func TestWriteFloodLeavesOtherTenantsAnswered(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		env := servertest.Start(t, d, servertest.Options{Edge: server.Edge{Limits: defaultRates, PoolSize: sqlDB.Stats().MaxOpenConnections}})
		env.SeedProject(t, "a")
		env.SeedProject(t, "b")
		tokA := env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite)
		cs := env.Connect(t, env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite))

		stop := make(chan struct{})
		var created atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if status, body := floodCreate(env, tokA); status == http.StatusOK && !strings.Contains(body, `"isError":true`) {
						created.Add(1)
					}
				}
			})
		}
		// A whole round of the flood served: it was running, every slot taken.
		eventually(t, "tenant A's flood to be served", func() bool { return created.Load() >= 64 })
		for range 10 {
			wantAnswered(t, cs, mcptools.ToolCreateTicket, createTicketArgs())
		}
		close(stop)
		wg.Wait()
	})
}

// TestSmallProtocolEdges: the protocol details that differed between MCP
// and REST or leaked input back (docs/contract.md#fair-share and issue 18's low findings).
func TestSmallProtocolEdges(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	restGet := func(authorization string) int {
		req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
		req.Header.Set("Authorization", authorization)
		resp, _ := do(t, req)
		return resp.StatusCode
	}

	t.Run("BearerTabIsNoTokenOnBoth", func(t *testing.T) {
		mcpStatus, _, _ := rpc(t, env, "", legacy, list, http.Header{"Authorization": {"Bearer\t" + tok}})
		if restStatus := restGet("Bearer\t" + tok); mcpStatus != http.StatusUnauthorized || restStatus != http.StatusUnauthorized {
			t.Errorf("Bearer<TAB>token: /mcp %d, /api/v1 %d, want 401 on both", mcpStatus, restStatus)
		}
	})
	t.Run("HugeAuthorizationRefusedBeforeParsing", func(t *testing.T) {
		huge := "Bearer " + strings.Repeat("A", authn.MaxAuthorization)
		mcpStatus, _, _ := rpc(t, env, "", legacy, list, http.Header{"Authorization": {huge}})
		if restStatus := restGet(huge); mcpStatus != http.StatusBadRequest || restStatus != http.StatusBadRequest {
			t.Errorf("Authorization over 16 KiB: /mcp %d, /api/v1 %d, want 400 on both", mcpStatus, restStatus)
		}
	})
	t.Run("FractionalIDIsRefusedNotAnsweredAsAnother", func(t *testing.T) {
		status, _, msg := rpc(t, env, tok, legacy, `{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}`, nil)
		if status != http.StatusBadRequest || string(msg["id"]) != "null" || msg["error"] == nil {
			t.Errorf("id 1.5: %d id %s %s, want 400 with id null and an error", status, msg["id"], msg["error"])
		}
	})
	t.Run("UnknownToolNameIsBounded", func(t *testing.T) {
		name := "no_such_tool_" + strings.Repeat("x", 10000)
		_, _, msg := rpc(t, env, tok, legacy, callBody(name, `{}`), nil)
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		if err := json.Unmarshal(msg["error"], &e); err != nil || e.Code != -32602 || len(e.Message) > 200 || !strings.Contains(e.Message, "no_such_tool_") {
			t.Errorf("unknown tool with a 10 KB name: %s, want -32602 naming at most a bounded prefix", msg["error"])
		}
		var line struct {
			Level string `json:"level"`
			Tool  string `json:"tool"`
		}
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `"msg":"tool call"`) && strings.Contains(l, "no_such_tool_") {
				_ = json.Unmarshal([]byte(l), &line) // checked below
			}
		}
		if line.Level != "WARN" || len(line.Tool) > 100 || strings.Contains(logs.String(), strings.Repeat("x", 200)) {
			t.Errorf("log of the unknown tool: level %q, tool of %d bytes; want WARN and a bounded name, nowhere the whole name", line.Level, len(line.Tool))
		}
	})
	t.Run("ConsoleAndMetricsCheckHost", func(t *testing.T) {
		for _, path := range []string{"/console/", server.MetricsPath} {
			req, _ := http.NewRequest(http.MethodGet, env.URL+path, nil)
			req.Host = "rebind.attacker.example"
			if resp, _ := do(t, req); resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s with a rebinding Host: %d, want 403", path, resp.StatusCode)
			}
			if resp, _ := get2(t, env.URL+path); resp.StatusCode != http.StatusOK {
				t.Errorf("%s with the server's own Host: %d, want 200", path, resp.StatusCode)
			}
		}
	})
}
