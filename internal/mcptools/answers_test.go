package mcptools_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// createTickets creates n tickets of priority in the seeded project and
// returns their keys.
func createTickets(t *testing.T, cs *mcp.ClientSession, n int, priority string) []string {
	t.Helper()
	keys := make([]string, 0, n)
	for range n {
		args := with(ticketArgs(newOperationID(t)), "priority", priority)
		keys = append(keys, created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args)).Ticket.Key)
	}
	return keys
}

// TestBulkAnswerOfNinetyNineTicketsFitsEightKiB closes 99 tickets over MCP:
// the structured answer lists per ticket only key, version and changes, in
// at most 8 KiB (the full tickets it carried before 591a4c7 were 49,566 B:
// docs/agents.md), and its text block is one line saying what changed; the
// replay answers the same.
func TestBulkAnswerOfNinetyNineTicketsFitsEightKiB(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	keys := createTickets(t, cs, 99, "normal")
	args := map[string]any{"operation_id": newOperationID(t), "ids": keys, "status": "closed"}
	for _, round := range []string{"first", "replay"} {
		res := servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, args)
		body, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError || len(body) > 8<<10 {
			t.Fatalf("%s: %d B of structured content (error %v); want a success within 8 KiB", round, len(body), res.IsError)
		}
		t.Logf("%s: %d B of structured content for 99 tickets", round, len(body))
		var raw struct {
			Tickets []map[string]json.RawMessage `json:"tickets"`
		}
		if err := json.Unmarshal(body, &raw); err != nil || len(raw.Tickets) != 99 {
			t.Fatalf("%s: %s: %v; want 99 tickets", round, body, err)
		}
		for field := range raw.Tickets[0] {
			if !slices.Contains([]string{"key", "version", "changes"}, field) {
				t.Errorf("%s: a bulk item carries %q; want only key, version, changes", round, field)
			}
		}
		out := servertest.Decode[mcptools.BulkUpdateTicketsOut](t, res)
		if it := out.Tickets[98]; it.Key != keys[98] || it.Version != 2 || it.Changes["status"].From != "open" || it.Changes["status"].To != "closed" {
			t.Errorf("%s: last item = %+v; want %s at v2, status open → closed", round, it, keys[98])
		}
		line := text(res)
		if strings.Contains(line, "\n") || !strings.Contains(line, "99 of 99 tickets") || !strings.Contains(line, "status open → closed (99)") ||
			len(line) > 400 {
			t.Errorf("%s: text = %q; want one short line naming 99 tickets and status open → closed (99)", round, line)
		}
		if (round == "replay") != out.Replayed || (round == "replay") != strings.HasPrefix(line, "Replayed") {
			t.Errorf("%s: replayed %v, text %q", round, out.Replayed, line)
		}
	}
}

// TestApprovalPromptSaysWhatWillChange: the form's message for a bulk
// close and for a bulk reassign-and-lower-priority of the same 12 tickets
// name the fields' moves, the count and the first keys, so they read apart.
func TestApprovalPromptSaysWhatWillChange(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	p := newPerson(false)
	cs := formClient(t, env, writeToken(t, env, "alice"), p)
	keys := createTickets(t, cs, 12, "normal")
	ask := func(args map[string]any) string {
		t.Helper()
		args["operation_id"], args["ids"] = newOperationID(t), keys
		toolError(t, servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, args), "approval_declined")
		return p.last.Load().(*mcp.ElicitParams).Message
	}
	closing := ask(map[string]any{"status": "closed"})
	moving := ask(map[string]any{"assignee": "me", "priority": "low"})
	for msg, wants := range map[string][]string{
		closing: {"12 tickets", keys[0], keys[4], "and 7 more", "status open → closed (12)"},
		moving:  {"12 tickets", keys[0], "assignee none → alice (12)", "priority normal → low (12)"},
	} {
		for _, want := range wants {
			if !strings.Contains(msg, want) {
				t.Errorf("asked %q; want it to name %q", msg, want)
			}
		}
	}
	if strings.Contains(moving, "status") || strings.Contains(closing, "priority") {
		t.Errorf("close asked %q, reassign asked %q; want each to name only its own fields", closing, moving)
	}
}

// TestNoApprovalForAWriteThatChangesNothing: making an urgent ticket urgent,
// or "changing" ten tickets to what they are, asks nobody and answers an
// unchanged update; a real change to urgent still asks.
func TestNoApprovalForAWriteThatChangesNothing(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	p := newPerson(true)
	cs := formClient(t, env, writeToken(t, env, "alice"), p)
	urgent := createTickets(t, cs, 1, "urgent")[0]
	asked := p.asked.Load()
	res := servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": urgent, "priority": "urgent"})
	same := servertest.Decode[mcptools.UpdateTicketOut](t, res)
	if res.IsError || p.asked.Load() != asked || len(same.Changes) != 0 || same.Version != 1 {
		t.Errorf("urgent → urgent: %s (asked %d more); want an unchanged v1, nobody asked", text(res), p.asked.Load()-asked)
	}
	open := createTickets(t, cs, approval.DefaultBulkThreshold, "normal")
	asked = p.asked.Load()
	res = servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, map[string]any{"operation_id": newOperationID(t), "ids": open, "status": "open"})
	bulk := servertest.Decode[mcptools.BulkUpdateTicketsOut](t, res)
	if res.IsError || p.asked.Load() != asked || len(bulk.Tickets) != len(open) || len(bulk.Tickets[0].Changes) != 0 {
		t.Errorf("a bulk of %d to what they are: %s (asked %d more); want unchanged, nobody asked", len(open), text(res), p.asked.Load()-asked)
	}
	servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": open[0], "priority": "urgent"})
	if p.asked.Load() != asked+1 {
		t.Errorf("normal → urgent asked %d times, want once", p.asked.Load()-asked)
	}
}

// TestInstructionsNameOnlyServedTools: whatever the toolsets and
// --read-only, the server's instructions name no tool it does not offer.
func TestInstructionsNameOnlyServedTools(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	for _, edge := range []server.Edge{
		{}, {ReadOnly: true}, {Toolsets: toolsets("tickets")}, {Toolsets: toolsets("comments")},
		{Toolsets: toolsets("links,people")}, {Toolsets: toolsets("all"), ReadOnly: true},
	} {
		env := servertest.Start(t, d, servertest.Options{Edge: edge})
		cs := env.ConnectWith(t, env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite), nil,
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		instructions := cs.InitializeResult().Instructions
		list, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var offered []string
		for _, tool := range list.Tools {
			offered = append(offered, tool.Name)
		}
		for _, tool := range mcptools.Tools() {
			named := regexp.MustCompile(`\b` + tool.Name + `\b`).MatchString(instructions)
			if named && !slices.Contains(offered, tool.Name) {
				t.Errorf("toolsets %q, read-only %v: the instructions name %s, which is not offered (%v):\n%s",
					edge.Toolsets, edge.ReadOnly, tool.Name, offered, instructions)
			}
		}
		readOnly := !slices.ContainsFunc(offered, func(n string) bool {
			return slices.Contains([]string{mcptools.ToolCreateTicket, mcptools.ToolAddComment, mcptools.ToolLinkTickets}, n)
		})
		if readOnly != strings.Contains(instructions, "only reads") || !strings.Contains(instructions, "ticketd") {
			t.Errorf("toolsets %q, read-only %v: instructions %q; want them to say it only reads exactly when it does", edge.Toolsets, edge.ReadOnly, instructions)
		}
	}
}
