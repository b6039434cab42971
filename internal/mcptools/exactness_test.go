package mcptools_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// The protocol versions the exactness tests speak: the sessionless one, and
// the last one with an initialize handshake.
var versions = []string{"2026-07-28", "2025-11-25"}

// recorder keeps the last response body of each tools/call, as the bytes
// the server sent, so a test can see what the Go client's types hide (the
// unexported resultType).
type recorder struct {
	next http.RoundTripper // servertest.Bearer, which sends the token
	mu   sync.Mutex
	last []byte
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	isCall := bytes.Contains(peek(req), []byte(`"method":"tools/call"`))
	resp, err := r.next.RoundTrip(req)
	if err != nil || !isCall {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	r.mu.Lock()
	r.last = b
	r.mu.Unlock()
	return resp, nil
}

// peek returns a request's body without consuming it.
func peek(req *http.Request) []byte {
	if req.GetBody == nil {
		return nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(body)
	return b
}

// lastResult decodes the last tools/call answer's result as sent.
func (r *recorder) lastResult(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	r.mu.Lock()
	b := r.last
	r.mu.Unlock()
	var msg struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &msg); err != nil || msg.Result == nil {
		t.Fatalf("last tools/call answer is not a result: %v %s", err, b)
	}
	return msg.Result
}

// resolvedSchemas lists tools over the session and resolves each output
// schema, as a validating client would.
func resolvedSchemas(t *testing.T, cs *mcp.ClientSession) map[string]*jsonschema.Resolved {
	t.Helper()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*jsonschema.Resolved)
	for _, tool := range res.Tools {
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var s jsonschema.Schema
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s output schema: %v", tool.Name, err)
		}
		r, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s output schema does not resolve: %v", tool.Name, err)
		}
		out[tool.Name] = r
	}
	if len(out) != len(toolNames) {
		t.Fatalf("tools/list shows %d tools, want %d", len(out), len(toolNames))
	}
	return out
}

// validates checks content against a resolved schema as JSON.
func validates(t *testing.T, r *jsonschema.Resolved, content any) error {
	t.Helper()
	var v any
	if err := json.Unmarshal(mustJSON(t, content), &v); err != nil {
		t.Fatal(err)
	}
	return r.Validate(v)
}

// TestEveryErrorFitsEveryToolAtBothVersions fetches the advertised output
// schemas with a go-sdk client over real HTTP at 2026-07-28 and 2025-11-25,
// and checks that the error ticketd answers for every code of the error
// table validates against every tool's schema; then makes real calls that
// end in errors built by the SDK's argument check (reshaped), by the edge
// (arguments null, rate_limited) and by the tools (not_found,
// idempotency_conflict, version_conflict with its ticket), and checks each
// is a well-formed tool result for the version: valid structured content,
// and at 2026-07-28 resultType "complete" and the server's identity in
// _meta, as the SDK's own results carry.
func TestEveryErrorFitsEveryToolAtBothVersions(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{
		// Reads are limited so a burst meets rate_limited; writes are not.
		Edge: server.Edge{Limits: limits.Config{ReadsPerSecond: 0.01, Burst: 40, WritesPerSecond: 1000}, Toolsets: allTools.Toolsets},
	})
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			// A tenant per version: each meets the read limit on its own.
			tenant := "acme-" + version
			env.SeedProject(t, tenant)
			rec := &recorder{next: servertest.Bearer(env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite), http.DefaultTransport)}
			cs, err := servertest.DialWith(env.Endpoint, rec, version)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			schemas := resolvedSchemas(t, cs)

			for _, row := range errcode.Table {
				for tool, schema := range schemas {
					// A tool echoes the operation_id its input names; one
					// that takes none has none to echo.
					opID := ""
					if mcptools.NamesOperation(tool) {
						opID = newOperationID(t)
					}
					content := mcptools.ErrorContent(row.Code, opID)
					if err := validates(t, schema, content); err != nil {
						t.Errorf("%s error does not fit %s's output schema: %v", row.Code, tool, err)
					}
				}
			}

			// Real errors, each checked as the client got it.
			check := func(tool, code string, res *mcp.CallToolResult) {
				t.Helper()
				if !res.IsError {
					t.Fatalf("%s: want an isError result with %s, got %s", tool, code, mustJSON(t, res))
				}
				toolError(t, res, code)
				if err := validates(t, schemas[tool], res.StructuredContent); err != nil {
					t.Errorf("%s %s result does not fit the output schema: %v", tool, code, err)
				}
				raw := rec.lastResult(t)
				if version >= "2026-07-28" {
					if string(raw["resultType"]) != `"complete"` {
						t.Errorf("%s %s result has resultType %s, want \"complete\"", tool, code, raw["resultType"])
					}
					if _, ok := res.GetMeta()[mcp.MetaKeyServerInfo]; !ok {
						t.Errorf("%s %s result has no serverInfo in _meta: %s", tool, code, raw["_meta"])
					}
				} else if raw["resultType"] != nil {
					t.Errorf("%s %s result at %s carries resultType %s", tool, code, version, raw["resultType"])
				}
			}
			call := func(tool string, args any) *mcp.CallToolResult {
				t.Helper()
				return servertest.Call(t, cs, tool, args)
			}
			check(mcptools.ToolGetTicket, "invalid_input", call(mcptools.ToolGetTicket, map[string]any{}))
			check(mcptools.ToolGetTicket, "invalid_input", call(mcptools.ToolGetTicket, json.RawMessage(`null`)))
			// An operation_id passed to a tool that takes none is not echoed.
			check(mcptools.ToolGetTicket, "invalid_input", call(mcptools.ToolGetTicket, map[string]any{"id": "SUP-1", "operation_id": newOperationID(t)}))
			check(mcptools.ToolGetTicket, "not_found", call(mcptools.ToolGetTicket, map[string]any{"id": "SUP-999"}))
			opID := newOperationID(t)
			made := created(t, call(mcptools.ToolCreateTicket, ticketArgs(opID)))
			check(mcptools.ToolCreateTicket, "idempotency_conflict", call(mcptools.ToolCreateTicket, with(ticketArgs(opID), "title", "Another")))
			check(mcptools.ToolUpdateTicket, "version_conflict", call(mcptools.ToolUpdateTicket, map[string]any{
				"operation_id": newOperationID(t), "id": made.TicketID, "if_version": 7, "status": "closed"}))
			// bulk_update_tickets' version_conflict carries the ticket too.
			check(mcptools.ToolBulkUpdateTickets, "version_conflict", call(mcptools.ToolBulkUpdateTickets, map[string]any{
				"operation_id": newOperationID(t), "ids": []string{made.TicketID}, "if_versions": map[string]int{made.TicketID: 7}, "status": "closed"}))
			for range 60 {
				res := call(mcptools.ToolListProjects, map[string]any{})
				if res.IsError {
					check(mcptools.ToolListProjects, "rate_limited", res)
					return
				}
			}
			t.Error("60 reads over a burst of 40 never met rate_limited")
		})
	}
}
