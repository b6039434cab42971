package mcptools_test

import (
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestVocabulariesAcceptAnyCaseAsRESTDoes sends priority and status in upper
// case over MCP: the service normalises case for every transport, so MCP
// must not refuse what REST accepts (no enum on the input schemas).
func TestVocabulariesAcceptAnyCaseAsRESTDoes(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	out := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "priority", "NORMAL")))
	if out.Ticket.Priority != "normal" {
		t.Errorf("created priority %q, want normal", out.Ticket.Priority)
	}
	res := servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{
		"operation_id": newOperationID(t), "id": out.Ticket.Key, "status": "In_Progress", "priority": "High",
	})
	if res.IsError {
		t.Fatalf("update with upper-case values refused: %s", text(res))
	}
	up := servertest.Decode[mcptools.UpdateTicketOut](t, res)
	if up.Ticket.Status != "in_progress" || up.Ticket.Priority != "high" {
		t.Errorf("updated ticket %+v, want in_progress and high", up.Ticket)
	}
	list := servertest.Decode[mcptools.ListTicketsOut](t, servertest.Call(t, cs, mcptools.ToolListTickets, map[string]any{"priority": "HIGH", "status": "IN_PROGRESS"}))
	if len(list.Tickets) != 1 || list.Tickets[0].ID != out.TicketID {
		t.Errorf("list by upper-case filters = %+v, want the one ticket", list.Tickets)
	}
	if res := servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "priority", "medium")); !res.IsError {
		t.Error(`priority "medium" was accepted`)
	}
}
