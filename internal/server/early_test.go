package server_test

import (
	"net/http"
	"strings"
	"testing"

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
