package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestLifecycleWritesShareOneKeySpace: update_ticket and add_comment are the
// same operations over MCP and REST. A write made over one transport is
// replayed, not repeated, by the other with the same key and intent, and
// the same key with other input is a conflict on the other transport too.
func TestLifecycleWritesShareOneKeySpace(t *testing.T) {
	t.Parallel()
	writes := []struct {
		tool, method, path, body, otherBody string
		args                                map[string]any
	}{
		{
			tool: mcptools.ToolUpdateTicket, method: http.MethodPatch, path: "", body: `{"status":"resolved"}`,
			otherBody: `{"status":"closed"}`, args: map[string]any{"status": "resolved"},
		},
		{
			tool: mcptools.ToolAddComment, method: http.MethodPost, path: "/comments", body: `{"body":"Fixed."}`,
			otherBody: `{"body":"Not fixed."}`, args: map[string]any{"body": " Fixed. "},
		},
	}
	for _, w := range writes {
		t.Run(w.tool, func(t *testing.T) {
			t.Parallel()
			dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
				env := servertest.Start(t, d, servertest.Options{})
				env.SeedProject(t, "acme")
				token := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
				cs := env.Connect(t, token)
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{
					"operation_id": uuid.NewString(), "project_id": "support", "title": "Printer on fire"})
				tk := servertest.Decode[mcptools.CreateTicketOut](t, res).Ticket

				rest := func(key, body string) *http.Response {
					t.Helper()
					req, err := http.NewRequest(w.method, env.URL+"/api/v1/tickets/"+tk.Key+w.path, strings.NewReader(body))
					if err != nil {
						t.Fatal(err)
					}
					req.Header.Set("Authorization", "Bearer "+token)
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Idempotency-Key", key)
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					_ = resp.Body.Close()
					return resp
				}
				mcpCall := func(key string) bool {
					t.Helper()
					args := map[string]any{"operation_id": key, "id": tk.ID}
					for k, v := range w.args {
						args[k] = v
					}
					res := servertest.Call(t, cs, w.tool, args)
					if res.IsError {
						t.Fatalf("%s over MCP failed: %+v", w.tool, res.StructuredContent)
					}
					return servertest.Decode[struct {
						Replayed bool `json:"replayed"`
					}](t, res).Replayed
				}

				// MCP first, then REST.
				key := uuid.NewString()
				if mcpCall(key) {
					t.Fatal("the first MCP call replayed")
				}
				if resp := rest(key, w.body); resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" {
					t.Errorf("REST retry of the MCP write = %d replayed=%q, want 200 replayed", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
				}
				if resp := rest(key, w.otherBody); resp.StatusCode != http.StatusUnprocessableEntity {
					t.Errorf("REST with the MCP key and other input = %d, want 422", resp.StatusCode)
				}
				// REST first, then MCP: the write already happened.
				key = uuid.NewString()
				if resp := rest(key, w.body); resp.StatusCode/100 != 2 || resp.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("first REST write = %d replayed=%q", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
				}
				if !mcpCall(key) {
					t.Errorf("MCP retry of the REST write applied it again")
				}
			})
		})
	}
}
