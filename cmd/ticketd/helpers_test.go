package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// testSecret is an HS256 secret long enough for the verifier.
const testSecret = "test-secret-0123456789-abcdefghijklmnopqrstuvwxyz"

// baseEnv is a valid non-dev configuration on an ephemeral port; tests copy
// it and change what they are about.
func baseEnv(databaseURL string) map[string]string {
	return map[string]string{
		"TICKETD_ADDR":             "127.0.0.1:0",
		"TICKETD_DATABASE_URL":     databaseURL,
		"TICKETD_JWT_ISSUER":       "https://issuer.test",
		"TICKETD_JWT_HS256_SECRET": testSecret,
		"TICKETD_LOG_FORMAT":       "json",
	}
}

func with(env map[string]string, kv ...string) map[string]string {
	out := make(map[string]string, len(env)+len(kv)/2)
	for k, v := range env {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func getenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// serveProc is a `ticketd serve` running in-process.
type serveProc struct {
	URL    string // where it listens, from its "listening" log line
	Stdout *logtest.Buffer
	Stderr *logtest.Buffer
	cancel context.CancelFunc
	done   chan error
}

// startServe runs `ticketd serve args…` with env (which must ask for JSON
// logs) and waits until it listens. The server is stopped at cleanup.
func startServe(tb testing.TB, env map[string]string, args ...string) *serveProc {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &serveProc{Stdout: &logtest.Buffer{}, Stderr: &logtest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, append([]string{"ticketd", "serve"}, args...), getenv(env), strings.NewReader(""), s.Stdout, s.Stderr)
	}()
	tb.Cleanup(func() {
		cancel()
		<-s.done
	})
	deadline := time.After(30 * time.Second)
	for {
		if u := listeningURL(s.Stderr.String()); u != "" {
			s.URL = u
			return s
		}
		select {
		case err := <-s.done:
			s.done <- err
			tb.Fatalf("serve exited before listening: %v\nstderr:\n%s", err, s.Stderr)
		case <-deadline:
			tb.Fatalf("serve did not listen within 30s; stderr:\n%s", s.Stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop cancels the server's context, as SIGTERM does, and returns what run
// returned.
func (s *serveProc) stop(tb testing.TB) error {
	tb.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(time.Minute):
		tb.Fatal("serve did not stop within a minute of cancellation")
		return nil
	}
}

// listeningURL finds the url of the JSON "listening" log line.
func listeningURL(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var line struct{ Msg, URL string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "listening" {
			return line.URL
		}
	}
	return ""
}

// mintToken runs `ticketd token args…` with env and returns its output.
func mintToken(tb testing.TB, env map[string]string, args ...string) string {
	tb.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"ticketd", "token"}, args...), getenv(env), strings.NewReader(""), &stdout, &stderr)
	if err != nil {
		tb.Fatalf("ticketd token: %v", err)
	}
	tok := strings.TrimSuffix(stdout.String(), "\n")
	if tok == "" || strings.ContainsAny(tok, " \n") {
		tb.Fatalf("ticketd token printed %q, want one token on one line", stdout.String())
	}
	return tok
}

// connect opens an MCP client session to mcpURL authenticated with token.
func connect(tb testing.TB, mcpURL, token string) *mcp.ClientSession {
	tb.Helper()
	return servertest.Connect(tb, mcpURL, token)
}

// createdTicket is the part of create_ticket's result the tests check.
type createdTicket struct {
	OperationID string `json:"operation_id"`
	Status      string `json:"status"`
	Replayed    bool   `json:"replayed"`
	Ticket      struct {
		ID       string `json:"id"`
		Key      string `json:"key"`
		Reporter string `json:"reporter"`
	} `json:"ticket"`
}

// createTicket calls create_ticket with a fresh operation ID and returns
// the operation ID and the call's outcome.
func createTicket(ctx context.Context, s *mcp.ClientSession, title string) (string, createdTicket, error) {
	opID := uuid.NewString()
	var out createdTicket
	res, err := s.CallTool(ctx, &mcp.CallToolParams{
		Name:      "create_ticket",
		Arguments: map[string]any{"operation_id": opID, "project_id": "support", "title": title},
	})
	if err != nil {
		return opID, out, err
	}
	if res.IsError {
		return opID, out, toolError(res)
	}
	return opID, out, decodeStructured(res, &out)
}

// callTool calls a read tool and decodes its structured result into out.
func callTool(tb testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		tb.Fatalf("%s: %v", name, toolError(res))
	}
	if err := decodeStructured(res, out); err != nil {
		tb.Fatalf("%s: %v", name, err)
	}
}

type toolErr string

func (e toolErr) Error() string { return string(e) }

func toolError(res *mcp.CallToolResult) error {
	b, _ := json.Marshal(res.StructuredContent)
	return toolErr("tool error: " + string(b))
}

func decodeStructured(res *mcp.CallToolResult, out any) error {
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// projectIDs lists the project IDs list_projects returns.
func projectIDs(tb testing.TB, s *mcp.ClientSession) []string {
	tb.Helper()
	var out struct {
		Projects []struct{ ID string } `json:"projects"`
	}
	callTool(tb, s, "list_projects", map[string]any{}, &out)
	var ids []string
	for _, p := range out.Projects {
		ids = append(ids, p.ID)
	}
	return ids
}

// ticketKeys lists the keys of the tickets list_tickets returns.
func ticketKeys(tb testing.TB, s *mcp.ClientSession) []string {
	tb.Helper()
	var out struct {
		Tickets []struct{ Key string } `json:"tickets"`
	}
	callTool(tb, s, "list_tickets", map[string]any{}, &out)
	var keys []string
	for _, t := range out.Tickets {
		keys = append(keys, t.Key)
	}
	return keys
}

// seedProject creates project support (SUP) for tenant in the database at
// rawURL, which must be migrated.
func seedProject(tb testing.TB, rawURL, tenant string) {
	tb.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, rawURL)
	if err != nil {
		tb.Fatalf("open %s: %v", rawURL, err)
	}
	defer d.Close()
	ticketstest.SeedSupport(tb, tickets.NewService(d.Gorm, tickets.Options{}), tenant)
}
