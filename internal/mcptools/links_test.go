package mcptools_test

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

func TestLinkTicketsOverMCP(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		a := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket
		b := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket
		args := map[string]any{"operation_id": newOperationID(t), "id": a.Key, "link": "duplicated_by", "target": b.Key}
		first := servertest.Decode[mcptools.LinkTicketsOut](t, servertest.Call(t, cs, mcptools.ToolLinkTickets, args))
		if first.Replayed || !first.Changed || len(first.Links) != 1 || first.Links[0] != (contract.Link{Link: "duplicated_by", ID: b.ID, Key: b.Key}) {
			t.Fatalf("link_tickets = %+v", first)
		}
		again := servertest.Decode[mcptools.LinkTicketsOut](t, servertest.Call(t, cs, mcptools.ToolLinkTickets, args))
		if !again.Replayed || len(again.Links) != 1 {
			t.Errorf("retry = %+v, want replayed with the one link", again)
		}
		toolError(t, servertest.Call(t, cs, mcptools.ToolLinkTickets, with(args, "link", "relates_to")), "idempotency_conflict")

		got := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": b.Key}))
		if len(got.Links) != 1 || got.Links[0] != (contract.Link{Link: "duplicates", ID: a.ID, Key: a.Key}) {
			t.Errorf("get_ticket %s links = %+v, want duplicates %s", b.Key, got.Links, a.Key)
		}

		block := map[string]any{"operation_id": newOperationID(t), "id": a.Key, "link": "blocks", "target": b.Key}
		servertest.Decode[mcptools.LinkTicketsOut](t, servertest.Call(t, cs, mcptools.ToolLinkTickets, block))
		cycle := toolError(t, servertest.Call(t, cs, mcptools.ToolLinkTickets,
			map[string]any{"operation_id": newOperationID(t), "id": a.Key, "link": "blocked_by", "target": b.Key}), "invalid_input")
		if !strings.Contains(cycle.Error.Message, a.Key+" blocks "+b.Key) {
			t.Errorf("cycle error %q does not name the cycle", cycle.Error.Message)
		}
		toolError(t, servertest.Call(t, cs, mcptools.ToolLinkTickets, map[string]any{"operation_id": newOperationID(t), "id": a.Key, "link": "relates_to", "target": a.ID}), "invalid_input")

		env.SeedProject(t, "globex")
		other := env.Connect(t, env.Token(t, "globex", authn.ScopeRead, authn.ScopeWrite))
		foreign := created(t, servertest.Call(t, other, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket
		toolError(t, servertest.Call(t, cs, mcptools.ToolLinkTickets, map[string]any{"operation_id": newOperationID(t), "id": a.Key, "link": "relates_to", "target": foreign.ID}), "not_found")

		st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": args["operation_id"]}))
		if st.Status != "succeeded" || st.TicketID != a.ID {
			t.Errorf("get_operation_status = %+v, want succeeded on %s", st, a.Key)
		}
	})
}
