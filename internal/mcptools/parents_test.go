package mcptools_test

import (
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

func TestSubTasksOverMCP(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		top := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket
		args := with(ticketArgs(newOperationID(t)), "parent", top.Key)
		child := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args)).Ticket
		if again := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(args, "parent", top.ID))); !again.Replayed || again.Ticket.ID != child.ID {
			t.Errorf("retry naming the parent by UUID = %+v, want the same ticket replayed", again)
		}

		got := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": top.Key}))
		if got.Parent != nil || got.Children.Count != 1 || len(got.Children.Keys) != 1 || got.Children.Keys[0] != child.Key {
			t.Errorf("get_ticket %s: parent %+v, children %+v", top.Key, got.Parent, got.Children)
		}
		got = servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": child.Key}))
		if got.Parent == nil || got.Parent.Key != top.Key || got.Parent.ID != top.ID {
			t.Errorf("get_ticket %s: parent %+v, want %s", child.Key, got.Parent, top.Key)
		}
		list := servertest.Decode[mcptools.ListTicketsOut](t, servertest.Call(t, cs, mcptools.ToolListTickets, map[string]any{"parent": top.Key}))
		if len(list.Tickets) != 1 {
			t.Errorf("list_tickets(parent) = %+v, want the one sub-task", list.Tickets)
		}

		toolError(t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": top.Key, "parent": child.Key}), "invalid_input")
		detach := map[string]any{"operation_id": newOperationID(t), "id": child.Key, "parent": nil}
		res := servertest.Decode[mcptools.UpdateTicketOut](t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, detach))
		if ch, ok := res.Changes["parent"]; !ok || ch.To != nil {
			t.Errorf("detach changes = %+v, want parent to null", res.Changes)
		}
		if again := servertest.Decode[mcptools.UpdateTicketOut](t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, detach)); !again.Replayed {
			t.Errorf("detach retry = %+v, want replayed", again)
		}
		toolError(t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, with(detach, "parent", top.Key)), "idempotency_conflict")
		toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "parent", "SUP-9999")), "not_found")
	})
}
