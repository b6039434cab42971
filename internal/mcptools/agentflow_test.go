package mcptools_test

import (
	"slices"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestAgentFlow is docs/agents.md's agent flow over a real client: find a
// ticket by words, take it (assignee "me" finds it again), work on it,
// comment, resolve and close it, retrying every write once as an agent
// unsure of its connection would.
func TestAgentFlow(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "title", "Scanner jams")))
		want := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket

		found := servertest.Decode[summaryPage](t, servertest.Call(t, cs, mcptools.ToolListTickets,
			map[string]any{"query": "printer FIRE", "status": "open"}))
		if len(found.Tickets) != 1 || found.Tickets[0].ID != want.ID || found.Tickets[0].Version != 1 || found.Tickets[0].Assignee != nil {
			t.Fatalf("search found %+v, want only %s at version 1, unassigned", found.Tickets, want.Key)
		}

		twice := func(tool string, args map[string]any) writeOut {
			t.Helper()
			first := wrote(t, servertest.Call(t, cs, tool, args))
			if again := wrote(t, servertest.Call(t, cs, tool, args)); !again.Replayed || again.outcome() != first.outcome() {
				t.Errorf("%s retried: %+v, want a replay of %+v", tool, again, first)
			}
			return first
		}
		take := twice(mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": want.Key,
			"if_version": 1, "assignee": "agent", "status": "in_progress"})
		if take.Version != 2 {
			t.Errorf("taking the ticket made version %d, want 2", take.Version)
		}
		mine := servertest.Decode[summaryPage](t, servertest.Call(t, cs, mcptools.ToolListTickets, map[string]any{"assignee": "me"}))
		if len(mine.Tickets) != 1 || mine.Tickets[0].ID != want.ID || *mine.Tickets[0].Assignee != "agent" {
			t.Errorf("assignee=me found %+v, want %s", mine.Tickets, want.Key)
		}
		twice(mcptools.ToolAddComment, map[string]any{"operation_id": newOperationID(t), "id": want.Key, "body": "Replaced the fuser."})
		twice(mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": want.Key, "if_version": 2, "status": "resolved"})
		done := twice(mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": want.Key, "if_version": 3, "status": "closed"})

		got := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": want.ID}))
		if got.Ticket.Status != "closed" || got.Ticket.Version != 4 || done.Version != 4 {
			t.Errorf("ticket ends %s at version %d (close made %d), want closed at 4", got.Ticket.Status, got.Ticket.Version, done.Version)
		}
		comments := servertest.Decode[mcptools.ListCommentsOut](t, servertest.Call(t, cs, mcptools.ToolListComments, map[string]any{"id": want.Key}))
		if len(comments.Comments) != 1 || comments.Comments[0].Author != "agent" {
			t.Errorf("comments = %+v, want the one comment by agent", comments.Comments)
		}
	})
}

// TestStaleIfVersionCarriesTheCurrentTicket: a version_conflict result holds
// what the agent needs to decide again, writes nothing and records nothing,
// so the same operation_id works with the current version.
func TestStaleIfVersionCarriesTheCurrentTicket(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	tk := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket
	wrote(t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": tk.ID, "add_labels": []string{"Urgent"}}))

	args := map[string]any{"operation_id": newOperationID(t), "id": tk.Key, "if_version": 1, "status": "resolved"}
	e := toolError(t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, args), "version_conflict")
	if e.Error.Retryable || e.CurrentVersion != 2 || e.Ticket == nil || e.Ticket.Version != 2 ||
		!slices.Contains(e.Ticket.Labels, "urgent") || e.Ticket.Status != "open" {
		t.Errorf("version_conflict = %+v, want not retryable with current_version 2 and the current ticket", e)
	}
	if out := wrote(t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, with(args, "if_version", 2))); out.Replayed || out.Version != 3 {
		t.Errorf("retry on the current version = %+v, want a fresh change to version 3", out)
	}
}
