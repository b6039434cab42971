package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// serveStdio runs ServeStdio as p over pipes and returns a connected client
// and a channel with ServeStdio's result.
func serveStdio(t *testing.T, svc *tickets.Service, p authn.Principal) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- mcptools.ServeStdio(context.Background(), svc, p, nil, serverIn, serverOut, mcptools.StdioOptions{})
		_ = serverOut.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatalf("connect over stdio pipes: %v", err)
	}
	return cs, done
}

func TestServeStdioActsAsTheStartupPrincipal(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs, done := serveStdio(t, env.Service, authn.Principal{
		Tenant: tenant, Subject: "local-agent", Scopes: []string{authn.ScopeRead, authn.ScopeWrite},
		Expires: time.Now().Add(time.Hour),
	})

	projects := servertest.Decode[mcptools.ListProjectsOut](t, servertest.Call(t, cs, mcptools.ToolListProjects, nil))
	if len(projects.Projects) != 1 {
		t.Errorf("projects over stdio = %+v", projects)
	}
	args := ticketArgs(newOperationID(t))
	first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
	if first.Ticket.Reporter != "local-agent" {
		t.Errorf("reporter = %q, want the stdio principal's subject", first.Ticket.Reporter)
	}
	if again := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args)); !again.Replayed {
		t.Errorf("stdio retry was not a replay")
	}
	toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(args, "tenant_id", "globex")), "invalid_input")

	if err := cs.Close(); err != nil {
		t.Errorf("close client: %v", err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeStdio after the client left = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeStdio did not return after the client closed its end")
	}
}

func TestServeStdioRechecksExpiryAndScope(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	expired, _ := serveStdio(t, env.Service, authn.Principal{
		Tenant: tenant, Subject: "a", Scopes: []string{authn.ScopeRead}, Expires: time.Now().Add(-time.Minute),
	})
	t.Cleanup(func() { _ = expired.Close() })
	toolError(t, servertest.Call(t, expired, mcptools.ToolListProjects, nil), "unauthenticated")

	readOnly, _ := serveStdio(t, env.Service, authn.Principal{
		Tenant: tenant, Subject: "a", Scopes: []string{authn.ScopeRead}, Expires: time.Now().Add(time.Hour),
	})
	t.Cleanup(func() { _ = readOnly.Close() })
	toolError(t, servertest.Call(t, readOnly, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t))), "forbidden")
	if n := env.CountOperations(t, tenant); n != 0 {
		t.Errorf("%d operation records written", n)
	}
}

func TestServeStdioRefusesAPrincipalWithoutTenant(t *testing.T) {
	t.Parallel()
	err := mcptools.ServeStdio(context.Background(), nil, authn.Principal{Subject: "a"}, nil, io.NopCloser(strings.NewReader("")), nopWriteCloser{io.Discard}, mcptools.StdioOptions{})
	if err == nil {
		t.Fatal("ServeStdio accepted a principal without a tenant")
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// TestMissingPrincipalIsAnErrorNotAPanic: a server reached without any
// verified principal (no token, no stdio principal) answers unauthenticated,
// and a panicking tool added to the real server answers an internal error.
func TestMissingPrincipalIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	s := mcptools.NewServer(env.Service, nil, mcptools.Options{})
	mcp.AddTool(s, &mcp.Tool{Name: "explode"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		panic("boom")
	})
	cs := servertest.ConnectInMemory(t, s)

	for _, tool := range []string{mcptools.ToolListProjects, mcptools.ToolCreateTicket} {
		args := map[string]any{}
		if tool == mcptools.ToolCreateTicket {
			args = ticketArgs(newOperationID(t))
		}
		toolError(t, servertest.Call(t, cs, tool, args), "unauthenticated")
	}
	toolError(t, servertest.Call(t, cs, "explode", nil), "internal")
	if n := env.CountOperations(t, tenant); n != 0 {
		t.Errorf("%d operation records written without a principal", n)
	}
}

// TestToolCallsAreLoggedWithoutTokens: each tool call logs its tool, tenant,
// operation ID, outcome and replay flag under the HTTP request's ID, and no
// log line contains the bearer token.
func TestToolCallsAreLoggedWithoutTokens(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{
		Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	env.SeedProject(t, tenant)
	token := writer(t, env)
	cs := env.Connect(t, token)
	args := ticketArgs(newOperationID(t))
	created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
	created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
	toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(args, "title", "other")), "idempotency_conflict")

	// The access log is written once a response is complete, which can be
	// just after the client has read it: wait for the last line.
	var (
		out        string
		calls      []map[string]any
		requestIDs map[string]bool
	)
	for deadline := time.Now().Add(10 * time.Second); ; {
		out = logs.String()
		calls, requestIDs = parseLogs(t, out)
		if len(calls) == 3 && allLogged(calls, requestIDs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if strings.Contains(out, token) || strings.Contains(out, "Bearer") {
		t.Fatalf("a log line contains the token:\n%s", out)
	}
	want := []struct {
		outcome  string
		replayed any
	}{{"ok", false}, {"ok", true}, {"idempotency_conflict", nil}}
	if len(calls) != len(want) {
		t.Fatalf("%d tool-call log lines, want %d:\n%s", len(calls), len(want), out)
	}
	for i, w := range want {
		c := calls[i]
		if c["tool"] != "create_ticket" || c["tenant"] != tenant || c["operation_id"] != args["operation_id"] ||
			c["outcome"] != w.outcome || c["replayed"] != w.replayed || c["duration"] == nil {
			t.Errorf("tool-call log %d = %v, want outcome %s, replayed %v", i, c, w.outcome, w.replayed)
		}
		if id, _ := c["request_id"].(string); !requestIDs[id] {
			t.Errorf("tool-call log %d has request_id %q, which no access-log line has", i, id)
		}
	}
}

// allLogged reports whether every tool call's request has its access-log
// line yet; requests finish in any order, so each must be checked.
func allLogged(calls []map[string]any, requestIDs map[string]bool) bool {
	for _, c := range calls {
		if !requestIDs[fmt.Sprint(c["request_id"])] {
			return false
		}
	}
	return true
}

// parseLogs splits JSON log output into tool-call records and the set of
// request IDs in access-log records.
func parseLogs(t *testing.T, out string) (calls []map[string]any, requestIDs map[string]bool) {
	t.Helper()
	requestIDs = map[string]bool{}
	for line := range strings.Lines(out) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		switch rec["msg"] {
		case "tool call":
			calls = append(calls, rec)
		case "http request":
			requestIDs[fmt.Sprint(rec["request_id"])] = true
		}
	}
	return calls, requestIDs
}

// TestServeStdioSurvivesBadLinesAndAnswersBeforeEOF: a malformed line, a
// batch and null arguments are each answered with an error and the session
// goes on; a create_ticket written just before stdin closes is answered and
// committed before ServeStdio returns.
func TestServeStdioSurvivesBadLinesAndAnswersBeforeEOF(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	p := authn.Principal{Tenant: tenant, Subject: "local-agent", Scopes: []string{authn.ScopeRead, authn.ScopeWrite}, Expires: time.Now().Add(time.Hour)}
	args, err := json.Marshal(ticketArgs(newOperationID(t)))
	if err != nil {
		t.Fatal(err)
	}
	input := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"v0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`this is not json`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_tickets","arguments":null}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"create_ticket","arguments":` + string(args) + `}}`,
	}, "\n") + "\n"
	var out logtest.Buffer
	if err := mcptools.ServeStdio(context.Background(), env.Service, p, nil, io.NopCloser(strings.NewReader(input)), nopWriteCloser{&out}, mcptools.StdioOptions{}); err != nil {
		t.Fatalf("ServeStdio = %v, want nil at the end of input", err)
	}
	answers := map[string]string{}
	var errorsWithoutID int
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("output line %q is not JSON: %v", line, err)
		}
		if string(msg.ID) == "null" && msg.Error != nil {
			errorsWithoutID++
			continue
		}
		answers[string(msg.ID)] = string(msg.Result) + string(msg.Error)
	}
	if errorsWithoutID != 2 {
		t.Errorf("%d error answers without id, want 2 (the bad line and the batch):\n%s", errorsWithoutID, out.String())
	}
	if !strings.Contains(answers["3"], "invalid_input") {
		t.Errorf("null arguments answered %q, want invalid_input", answers["3"])
	}
	if !strings.Contains(answers["4"], `"ticket_id"`) {
		t.Errorf("create_ticket written before EOF answered %q, want the created ticket", answers["4"])
	}
	if n := env.CountTickets(t, tenant); n != 1 {
		t.Errorf("%d tickets after EOF, want 1", n)
	}
}
