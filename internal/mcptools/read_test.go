package mcptools_test

import (
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestPreviewTicketPredictsAndWritesNothing walks one operation ID through
// create, replay and conflict predictions and checks that previews never
// write.
func TestPreviewTicketPredictsAndWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		args := ticketArgs(newOperationID(t))
		preview := func(args map[string]any) mcptools.PreviewTicketOut {
			t.Helper()
			res := servertest.Call(t, cs, mcptools.ToolPreviewTicket, args)
			if res.IsError {
				t.Fatalf("preview_ticket failed: %s", text(res))
			}
			return servertest.Decode[mcptools.PreviewTicketOut](t, res)
		}

		noID := preview(without(args, "operation_id"))
		if noID.Would != "" || noID.OperationID != "" || noID.Fingerprint == "" {
			t.Errorf("preview without an ID = %+v, want a fingerprint and no prediction", noID)
		}
		want := mcptools.PreviewTicket{ProjectID: "support", Title: "Printer on fire",
			Description: "Third floor, near the kitchen.", Priority: "urgent", Labels: []string{"hardware", "printer"}}
		if got := noID.Ticket; got.ProjectID != want.ProjectID || got.Title != want.Title || got.Priority != want.Priority ||
			got.Description != want.Description || len(got.Labels) != 2 || got.Labels[0] != "hardware" || got.Labels[1] != "printer" {
			t.Errorf("normalised ticket = %+v, want %+v", got, want)
		}
		if p := preview(args); p.Would != "create" || p.Fingerprint != noID.Fingerprint || p.OperationID != args["operation_id"] {
			t.Errorf("preview before create = %+v, want would=create with the same fingerprint", p)
		}
		if n, m := env.CountTickets(t, tenant), env.CountOperations(t, tenant); n != 0 || m != 0 {
			t.Fatalf("previews wrote %d tickets and %d operation records", n, m)
		}

		ticket := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
		// Same ticket spelled differently: same fingerprint, so a replay.
		respelled := with(with(args, "title", "  Printer on fire "), "labels", []string{"PRINTER", "hardware", "printer"})
		if p := preview(respelled); p.Would != "replay" || p.ExistingTicketID != ticket.TicketID {
			t.Errorf("preview of the created ticket = %+v, want would=replay of %s", p, ticket.TicketID)
		}
		conflict := servertest.Call(t, cs, mcptools.ToolPreviewTicket, with(args, "title", "Another ticket"))
		if conflict.IsError {
			t.Fatalf("a predicted conflict must be a normal result, got error: %s", text(conflict))
		}
		if p := servertest.Decode[mcptools.PreviewTicketOut](t, conflict); p.Would != "conflict" || p.ExistingTicketID != ticket.TicketID {
			t.Errorf("preview with other input = %+v, want would=conflict naming %s", p, ticket.TicketID)
		}
		if n, m := env.CountTickets(t, tenant), env.CountOperations(t, tenant); n != 1 || m != 1 {
			t.Errorf("after one create and previews: %d tickets, %d operation records; want 1 and 1", n, m)
		}

		// Under a parent named by its key, then by its UUID: one input, and
		// the preview of the create's retry predicts its replay.
		sub := with(ticketArgs(newOperationID(t)), "parent", strings.ToLower(ticket.Ticket.Key))
		child := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, sub))
		if p := preview(with(sub, "parent", ticket.TicketID)); p.Would != "replay" || p.ExistingTicketID != child.TicketID || p.Ticket.Parent != ticket.Ticket.Key {
			t.Errorf("preview of a sub-task's retry = %+v, want would=replay of %s under %s", p, child.TicketID, ticket.Ticket.Key)
		}
	})
}

func TestPreviewTicketRejectsUnknownProject(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	res := servertest.Call(t, cs, mcptools.ToolPreviewTicket, with(ticketArgs(newOperationID(t)), "project_id", "nope"))
	e := toolError(t, res, "invalid_input")
	if e.OperationID == "" {
		t.Errorf("preview error should echo the valid operation_id: %+v", e)
	}
	// The domain names no tool; MCP says how an agent finds the projects.
	if !strings.Contains(text(res), "call list_projects") {
		t.Errorf("unknown project error %q does not point to list_projects", text(res))
	}
}

func TestGetOperationStatusOfUnusedIDIsNotFound(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	id := newOperationID(t)
	res := servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": id})
	if res.IsError {
		t.Fatalf("not_found must be a normal result: %s", text(res))
	}
	st := servertest.Decode[contract.OperationStatus](t, res)
	if st.Status != "not_found" || st.OperationID != id || st.Action != "" || !strings.Contains(st.NextStep, "update_ticket") {
		t.Errorf("status of an unused ID = %+v", st)
	}
}

func TestGetAndListTickets(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		var keys []string
		for range 3 {
			keys = append(keys, created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket.Key)
		}

		byKey := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": "sup-1"}))
		if byKey.Ticket.Key != "SUP-1" {
			t.Errorf("get_ticket sup-1 = %+v", byKey.Ticket)
		}
		byID := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": byKey.Ticket.ID}))
		if byID.Ticket.Key != "SUP-1" {
			t.Errorf("get_ticket by ID = %+v", byID.Ticket)
		}
		e := toolError(t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": "SUP-99"}), "not_found")
		if e.Error.Retryable {
			t.Errorf("not_found marked retryable")
		}
		toolError(t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": "no such thing"}), "invalid_input")

		first := servertest.Decode[summaryPage](t, servertest.Call(t, cs, mcptools.ToolListTickets, map[string]any{"limit": 2}))
		if len(first.Tickets) != 2 || first.NextCursor == "" || first.Tickets[0].Key != keys[2] {
			t.Fatalf("first page = %+v, want the 2 newest and a cursor", first)
		}
		rest := servertest.Decode[summaryPage](t, servertest.Call(t, cs, mcptools.ToolListTickets,
			map[string]any{"limit": 2, "cursor": first.NextCursor}))
		if len(rest.Tickets) != 1 || rest.NextCursor != "" || rest.Tickets[0].Key != keys[0] {
			t.Errorf("second page = %+v, want the oldest ticket and no cursor", rest)
		}
		none := servertest.Decode[summaryPage](t, servertest.Call(t, cs, mcptools.ToolListTickets, map[string]any{"status": "closed"}))
		if none.Tickets == nil || len(none.Tickets) != 0 {
			t.Errorf("closed tickets = %#v, want an empty array", none.Tickets)
		}
	})
}
