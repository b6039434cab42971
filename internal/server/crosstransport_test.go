package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestOneOperationAcrossTransports proves MCP and REST share one key space and
// one write path: a ticket created over MCP is replayed, not duplicated, by a
// REST retry with the same key and intent, and a REST retry with other input
// is a conflict.
func TestOneOperationAcrossTransports(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := servertest.Start(t, d, servertest.Options{})
		env.SeedProject(t, "acme")
		token := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		key := uuid.NewString()

		res := servertest.Call(t, env.Connect(t, token), mcptools.ToolCreateTicket, map[string]any{
			"operation_id": key, "project_id": "support", "title": "Printer on fire", "labels": []string{"hardware"},
		})
		if res.IsError {
			t.Fatalf("create over MCP failed: %+v", res.Content)
		}
		created := servertest.Decode[mcptools.CreateTicketOut](t, res)

		post := func(body string) (*http.Response, contract.Ticket) {
			t.Helper()
			req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/tickets", strings.NewReader(body))
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
			defer resp.Body.Close()
			var tk contract.Ticket
			_ = json.NewDecoder(resp.Body).Decode(&tk)
			return resp, tk
		}

		// The same intent, spelt differently: normalisation makes it the same operation.
		resp, tk := post(`{"project_id":"support","title":" Printer on fire ","labels":["HARDWARE"]}`)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Idempotent-Replayed") != "true" || tk.ID != created.TicketID {
			t.Errorf("REST retry = %d replayed=%q ticket %s; want 200, replayed, ticket %s",
				resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), tk.ID, created.TicketID)
		}
		if resp, _ := post(`{"project_id":"support","title":"Something else"}`); resp.StatusCode != http.StatusUnprocessableEntity {
			t.Errorf("REST call with the same key and other input = %d, want 422", resp.StatusCode)
		}
		if n := env.CountTickets(t, "acme"); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}
