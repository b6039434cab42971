package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestEarlyRefusalAnswersAsTheFullChecksWould: while a tenant's write
// bucket is empty, a create is refused before the message is checked in
// full (mcpedge.EarlyLimits), and the answer is the one mcpedge.Limits gives:
// rate_limited with retry_after_ms, read by the SDK client at the version
// it negotiated. Everything the early look is not sure of is still
// answered by the full checks: a read is served, a token without the
// write scope gets 403, malformed JSON a parse error, and a write spelt
// another way is refused all the same, never run.
func TestEarlyRefusalAnswersAsTheFullChecksWould(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{Limits: limits.Config{WritesPerSecond: 0.01, ReadsPerSecond: 100, Burst: 1}}})
	env.SeedProject(t, "acme")
	writer := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	cs := env.Connect(t, writer)
	if res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "first"}); res.IsError {
		t.Fatalf("first create refused: %+v", res)
	}
	res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "second"})
	if out := servertest.Decode[mcptools.ErrorOut](t, res); !res.IsError || out.Error.Code != "rate_limited" || out.Error.RetryAfterMS == nil {
		t.Errorf("second create: %+v, want rate_limited with retry_after_ms", out)
	}
	if res := servertest.Call(t, cs, mcptools.ToolListProjects, map[string]any{}); res.IsError {
		t.Errorf("a read while writes are spent: %+v", res)
	}
	reader := env.Token(t, "acme", authn.ScopeRead)
	if status, _, msg := rpc(t, env, reader, legacy, callBody(mcptools.ToolCreateTicket, createArgs()), nil); status != http.StatusForbidden {
		t.Errorf("a read-only token's create while writes are spent: %d %s, want 403", status, msg["error"])
	}
	if status, _, msg := rpc(t, env, writer, legacy, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_ticket","arguments":{}`, nil); !strings.Contains(string(msg["error"]), "-32700") {
		t.Errorf("malformed JSON while writes are spent: %d %s, want a parse error", status, msg["error"])
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create\u005fticket","arguments":` + createArgs() + `}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":` + createArgs() + `,"name":"create_ticket"}}`,
		`{"jsonrpc":"2.0","id":"seven","method":"tools/call","params":{"name":"create_ticket","arguments":` + createArgs() + `}}`,
	} {
		if status, _, msg := rpc(t, env, writer, legacy, body, nil); status != http.StatusOK || toolErrorCode(t, msg) != "rate_limited" {
			t.Errorf("%s: %d, want rate_limited", body, status)
		}
	}
	// A key the SDK does not read as name (it compares keys exactly) is
	// an unknown tool to it, never a create.
	rpc(t, env, writer, legacy, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"Name":"create_ticket","arguments":`+createArgs()+`}}`, nil)
	if n := env.CountTickets(t, "acme"); n != 1 {
		t.Errorf("%d tickets, want the first create's one", n)
	}
}

// TestAFloodsRefusalsNameItsQueue: 30 callers of one tenant that retry the
// moment they are refused, at 20 writes a second (a token every 50 ms),
// each refusal held at most 100 ms. A refusal names the wait of the
// tenant's queue, and the callers whose refusals are being held are in
// it, so while several are held a refusal names more than its hold and
// retry_after_ms says what is left. Were only the next token named (50
// ms, all of it held), every refusal would say 0 ms left and the flood
// would be back every 50 ms, spinning the CPU (docs/perf.md, the flood).
func TestAFloodsRefusalsNameItsQueue(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{Limits: limits.Config{
		WritesPerSecond: 20, ReadsPerSecond: 100, Burst: 1, RefusalHold: 100 * time.Millisecond}}})
	env.SeedProject(t, "acme")
	tok := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	var mu sync.Mutex
	var refused int
	var longest int64
	var wg sync.WaitGroup
	for range 30 {
		wg.Go(func() {
			for range 5 {
				left, ok := refusalLeft(t, env, tok)
				if !ok {
					continue
				}
				mu.Lock()
				refused++
				longest = max(longest, left)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if refused == 0 || longest < 300 {
		t.Errorf("%d refusals, the longest naming %d ms left after its hold; want some naming at least 300 ms (six or more of the tenant's callers held with it)", refused, longest)
	}
}

// refusalLeft sends one create as a 2025 client and, if it was refused
// rate_limited, returns the retry_after_ms it named.
func refusalLeft(t *testing.T, env *servertest.Env, token string) (int64, bool) {
	req, err := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(callBody(mcptools.ToolCreateTicket, createArgs())))
	if err != nil {
		t.Error(err)
		return 0, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", legacy)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("create: %d %v %s", resp.StatusCode, err, body)
		return 0, false
	}
	text := string(body)
	for _, line := range strings.Split(text, "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			text = data
		}
	}
	var msg struct {
		Result struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Error struct {
					Code         string `json:"code"`
					RetryAfterMS *int64 `json:"retry_after_ms"`
				} `json:"error"`
			} `json:"structuredContent"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(text), &msg); err != nil {
		t.Errorf("create: %v in %s", err, text)
		return 0, false
	}
	e := msg.Result.StructuredContent.Error
	if !msg.Result.IsError || e.Code != "rate_limited" || e.RetryAfterMS == nil {
		return 0, false
	}
	return *e.RetryAfterMS, true
}
