package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// The admission tests (docs/operators.md#admission-and-fair-share) hold
// the work a call runs still by locking a table its statements need, so a
// call is in its slot for as long as the test says, and assert no timings.

// lockTable locks table of d's PostgreSQL database until the returned
// func is called (or the test ends): every statement that reads or writes
// it waits meanwhile.
func lockTable(t *testing.T, d *db.DB, table string) func() {
	t.Helper()
	tx := d.Gorm.Begin()
	if err := tx.Error; err != nil {
		t.Fatal(err)
	}
	if err := tx.Exec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE").Error; err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	var once sync.Once
	unlock := func() { once.Do(func() { tx.Rollback() }) }
	t.Cleanup(unlock)
	return unlock
}

// waitLocked waits until a statement of the server's waits on the lock
// lockTable holds on table: the call that made it holds its slots. The
// table is named through d's search_path, so a lock wait of a test running
// beside this one, in another schema of the same database, does not count.
func waitLocked(t *testing.T, d *db.DB, table string) {
	t.Helper()
	eventually(t, "a call to wait on the locked table", func() bool {
		var n int64
		if err := d.Gorm.Raw("SELECT count(*) FROM pg_locks WHERE relation = ?::regclass AND NOT granted", table).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n > 0
	})
}

// toolError is the contract error a tool error result carries.
type toolError struct {
	Code         string `json:"code"`
	Retryable    bool   `json:"retryable"`
	RetryAfterMS *int64 `json:"retry_after_ms"`
}

// toolErrorOf returns the contract error of a tool result's structured
// content (code "" when it carries none).
func toolErrorOf(t *testing.T, structured any) toolError {
	t.Helper()
	b, err := json.Marshal(structured)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Error toolError `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return out.Error
}

// TestAdmissionRefusalAnswersTheCallsID: with the one work slot held by a
// call that cannot finish and a queue of one, a tenant's further calls
// wait their turn and are refused past the wait bound or the full queue,
// and each refusal reaches the go-sdk client as the rate_limited tool
// result of its own call, with retry_after_ms, not as a transport error;
// a raw call's refusal names its id. The refusals are counted under
// create_ticket, and the held call is served once it can run.
func TestAdmissionRefusalAnswersTheCallsID(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	env := servertest.Start(t, d, servertest.Options{Edge: server.Edge{WorkSlots: 1, TenantQueue: 1, AdmissionWait: 300 * time.Millisecond}})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	cs := env.Connect(t, tok)
	before, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}

	unlock := lockTable(t, d, "operations")
	held := make(chan error, 1)
	go func() {
		res, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, createTicketArgs())
		if err == nil && res.IsError {
			err = fmt.Errorf("answered with an error: %+v", toolErrorOf(t, res.StructuredContent))
		}
		held <- err
	}()
	waitLocked(t, d, "operations")
	// Each call below is refused whether it finds the held call in the
	// slot (it waits out the bound) or before it (it waits behind it).
	const refusedCalls = 3
	for i := range refusedCalls {
		res, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, createTicketArgs())
		if err != nil {
			t.Fatalf("call %d: %v, want a tool result", i, err)
		}
		if e := toolErrorOf(t, res.StructuredContent); !res.IsError || e.Code != "rate_limited" || e.RetryAfterMS == nil || !e.Retryable {
			t.Fatalf("call %d past the bound: isError %v %+v, want rate_limited with retry_after_ms", i, res.IsError, e)
		}
	}
	status, _, msg := rpc(t, env, tok, legacy, callBody(mcptools.ToolCreateTicket, `{"operation_id":"`+createTicketArgs()["operation_id"].(string)+`","project_id":"support","title":"t"}`), nil)
	if status != http.StatusOK || string(msg["id"]) != "7" || !strings.Contains(string(msg["result"]), `"rate_limited"`) {
		t.Fatalf("raw call past the bound: %d %s, want 200 and the rate_limited result of id 7", status, msg)
	}
	unlock()
	if err := <-held; err != nil {
		t.Fatalf("the call that held the slot: %v, want served", err)
	}

	after, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	sample := requestsSample("mcp", mcptools.ToolCreateTicket, "rate_limited")
	if got := after[sample] - before[sample]; got != refusedCalls+1 {
		t.Errorf("%s moved by %v, want %d", sample, got, refusedCalls+1)
	}
	if got := after[requestsSample("mcp", "unmatched", "rate_limited")] - before[requestsSample("mcp", "unmatched", "rate_limited")]; got != 0 {
		t.Errorf("%v refusals counted as unmatched, want none", got)
	}
}

// TestRESTListsTakeTheTenantsPageShare: REST list pages take the page
// slots MCP lists take, and each tenant's share of them. With a share of
// one and tenant A's REST list held in its slot, A's second REST list and
// its MCP list are refused past the wait bound although work slots are
// free, while tenant B's list is admitted beside it.
func TestRESTListsTakeTheTenantsPageShare(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	env := servertest.Start(t, d, servertest.Options{Edge: server.Edge{WorkSlots: 4, MaxConcurrentPages: 4, MaxPagesPerTenant: 1, AdmissionWait: 300 * time.Millisecond}})
	env.SeedProject(t, "a")
	env.SeedProject(t, "b")
	tokA := env.Token(t, "a", authn.ScopeRead)
	tokB := env.Token(t, "b", authn.ScopeRead)
	cs := env.Connect(t, tokA)
	list := func(token string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, env.URL+"/api/v1/tickets?limit=100", nil)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, body := do(t, req)
		return resp.StatusCode, body
	}

	unlock := lockTable(t, d, "tickets")
	first, other := make(chan int, 1), make(chan int, 1)
	go func() { s, _ := list(tokA); first <- s }()
	waitLocked(t, d, "tickets")
	status, body := list(tokA)
	if status != http.StatusTooManyRequests || !strings.Contains(body, "rate_limited") {
		t.Fatalf("tenant A's second REST list beside its first: %d %s, want 429 rate_limited", status, body)
	}
	res, err := servertest.TryCall(cs, mcptools.ToolListTickets, map[string]any{})
	if err != nil || !res.IsError {
		t.Fatalf("tenant A's MCP list beside its REST list: %v %+v, want the rate_limited result", err, res)
	}
	go func() { s, _ := list(tokB); other <- s }()
	select {
	case s := <-other:
		t.Fatalf("tenant B's list beside A's answered %d before the table was free, want it admitted and waiting", s)
	case <-time.After(600 * time.Millisecond): // twice the wait bound: not refused
	}
	unlock()
	if s := <-first; s != http.StatusOK {
		t.Errorf("tenant A's first list: %d, want 200", s)
	}
	if s := <-other; s != http.StatusOK {
		t.Errorf("tenant B's list: %d, want 200", s)
	}
}

// TestHangingTrackerHoldsNoSharedSlot: tenant A's creates into a project
// whose tracker accepts requests and never answers, more at once than
// there are work slots, wait on the tracker without a work slot, so tenant
// B's local create is served while they hang.
func TestHangingTrackerHoldsNoSharedSlot(t *testing.T) {
	t.Parallel()
	gh := githubtest.New("ghp_hang")
	var hanging atomic.Int64
	stop := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/issues") {
			hanging.Add(1)
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		}
		gh.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	gh.SetBaseURL(api.URL)

	const slots = 2
	tracked := githubtest.Tracked("ghp_hang", time.Minute)
	tracked.Settle, tracked.Lease = time.Minute, 5*time.Minute
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{
		Edge:    server.Edge{WorkSlots: slots},
		Tracked: tracked,
	})
	admin := env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin)
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/projects", strings.NewReader(`{"id":"widgets","key":"WID","name":"Widgets",`+
		`"backend":{"kind":"github","repository":"acme/widgets","api_url":"`+api.URL+`","credential":"`+githubtest.Credential+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	if resp, body := do(t, req); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the tracker-backed project: %d %s", resp.StatusCode, body)
	}
	env.SeedProject(t, "b")

	csA := env.Connect(t, env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite))
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { close(stop); cancel() }) // first: the tracker answers, the calls end
	const creates = 3 * slots
	for range creates {
		go func() {
			_, _ = csA.CallTool(ctx, &mcp.CallToolParams{Name: mcptools.ToolCreateTicket,
				Arguments: map[string]any{"operation_id": createTicketArgs()["operation_id"], "project_id": "widgets", "title": "Hangs"}})
		}()
	}
	// The tracker cap (4 by default) lets more requests out than there
	// are slots: had each held its slot, the rest and B would wait.
	eventually(t, "more of tenant A's tracker requests hanging than there are work slots", func() bool { return hanging.Load() > slots })
	csB := env.Connect(t, env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite))
	for range 3 {
		wantAnswered(t, csB, mcptools.ToolCreateTicket, createTicketArgs())
	}
}

// TestReadyzTellsAnExhaustedWorkBudget: /readyz stays 200 while every work
// slot is taken but no call has had to wait, answers 503 once a call has
// waited out the bound without a slot, and 200 again once a slot is free.
func TestReadyzTellsAnExhaustedWorkBudget(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	env := servertest.Start(t, d, servertest.Options{Edge: server.Edge{WorkSlots: 1, AdmissionWait: 300 * time.Millisecond}})
	env.SeedProject(t, "acme")
	cs := env.Connect(t, env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite))
	readyz := func() int {
		resp, _ := get2(t, env.URL+server.ReadyPath)
		return resp.StatusCode
	}

	unlock := lockTable(t, d, "operations")
	held := make(chan error, 1)
	go func() { _, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, createTicketArgs()); held <- err }()
	waitLocked(t, d, "operations")
	if s := readyz(); s != http.StatusOK {
		t.Fatalf("/readyz with the one slot taken and nobody waiting: %d, want 200", s)
	}
	res, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, createTicketArgs())
	if err != nil || toolErrorOf(t, res.StructuredContent).Code != "rate_limited" {
		t.Fatalf("a call that found no slot free: %v %+v, want rate_limited", err, res)
	}
	// The refusal was held up to a second after the bound: past it by now.
	if s := readyz(); s != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the slot taken past the wait bound since a call found none: %d, want 503", s)
	}
	unlock()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	if s := readyz(); s != http.StatusOK {
		t.Fatalf("/readyz with the slot free again: %d, want 200", s)
	}
}
