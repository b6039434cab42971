package mcptools_test

import (
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestEnumArgumentsFoldAsRESTReadsThem: over Streamable HTTP, priority,
// status and sort in another case or with spaces are read as the enum value
// they name, as REST reads them, and stored in lower case; a value that
// names none is still refused. Without the fold the SDK's schema check
// refuses "NORMAL" with invalid_input.
func TestEnumArgumentsFoldAsRESTReadsThem(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		out := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket,
			with(ticketArgs(newOperationID(t)), "priority", " NORMAL ")))
		if out.Ticket.Priority != "normal" {
			t.Errorf("created with priority %q, want normal", out.Ticket.Priority)
		}
		res := servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{
			"operation_id": newOperationID(t), "id": out.TicketID, "status": "In_Progress", "priority": "High",
		})
		if res.IsError {
			t.Fatalf("update_ticket with status In_Progress, priority High: %s", text(res))
		}
		updated := servertest.Decode[mcptools.UpdateTicketOut](t, res)
		if updated.Ticket.Status != "in_progress" || updated.Ticket.Priority != "high" {
			t.Errorf("updated to status %q, priority %q; want in_progress, high", updated.Ticket.Status, updated.Ticket.Priority)
		}
		for _, args := range []map[string]any{
			{"status": []string{"OPEN", "In_Progress"}, "sort": "Created_Desc", "priority": "HIGH"},
			{"status": "IN_PROGRESS"},
		} {
			res := servertest.Call(t, cs, mcptools.ToolListTickets, args)
			if res.IsError {
				t.Fatalf("list_tickets %v: %s", args, text(res))
			}
			if page := servertest.Decode[summaryPage](t, res); len(page.Tickets) != 1 || page.Tickets[0].ID != out.TicketID {
				t.Errorf("list_tickets %v = %+v, want the one ticket", args, page.Tickets)
			}
		}
		toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket,
			with(ticketArgs(newOperationID(t)), "priority", "CRITICAL")), "invalid_input")
	})
}
