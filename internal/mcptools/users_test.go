package mcptools_test

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

func TestAssigneeOverMCP(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		tk := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket

		users := servertest.Decode[mcptools.ListUsersOut](t, servertest.Call(t, cs, mcptools.ToolListUsers, map[string]any{"query": "bo"}))
		if len(users.Users) != 1 || users.Users[0].ID != "bob" {
			t.Errorf("list_users bo = %+v", users.Users)
		}

		unknown := servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": tk.Key, "assignee": "bobby"})
		out := toolError(t, unknown, "invalid_input")
		if !strings.Contains(text(unknown), "list_users") || !strings.Contains(out.Error.Message, "bobby") {
			t.Errorf("unknown assignee error %q names no next step", text(unknown))
		}
		got := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": tk.Key}))
		if got.Ticket.Version != tk.Version || got.Ticket.Assignee != nil {
			t.Errorf("a refused assignee changed the ticket: %+v", got.Ticket)
		}

		me := servertest.Decode[mcptools.UpdateTicketOut](t, servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": tk.Key, "assignee": "me"}))
		if me.Ticket.Assignee == nil || *me.Ticket.Assignee != me.Ticket.Reporter {
			t.Errorf("assign me = %+v, want the caller", me.Ticket)
		}
	})
}
