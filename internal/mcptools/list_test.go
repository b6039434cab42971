package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// defaultPageBudget is the budget (docs/contract.md#lists-and-the-context-budget) for a default list_tickets page
// over an ordinary backlog: what a model reads when it just lists.
const defaultPageBudget = 8 << 10

// seedBacklog creates n tickets with descriptions of descLen characters.
func seedBacklog(t *testing.T, env *servertest.Env, n, descLen int) {
	t.Helper()
	for i := range n {
		_, err := env.Service.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "reporter"}, ticketstest.OpID(newOperationID(t)), tickets.NewTicket{
			ProjectID: "support", Title: fmt.Sprintf("Printer %d jams on tray %d", i, i%3),
			Description: strings.Repeat("word ", descLen/5), Labels: []string{"hardware", "printer"},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// structuredSize is the size of a result's structured content as sent.
func structuredSize(t *testing.T, content any) int {
	t.Helper()
	b, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

// TestDefaultListPageFitsTheBudget lists 50 tickets with 2 KB descriptions
// the way a model does first, with no arguments: 20 summaries, no
// descriptions, within 8 KiB of structured content.
func TestDefaultListPageFitsTheBudget(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	seedBacklog(t, env, 50, 2000)
	res := servertest.Call(t, env.Connect(t, writer(t, env)), mcptools.ToolListTickets, map[string]any{})
	if res.IsError {
		t.Fatalf("list_tickets: %s", text(res))
	}
	size := structuredSize(t, res.StructuredContent)
	page := servertest.Decode[summaryPage](t, res)
	t.Logf("default page: %d tickets, %d bytes of structured content (budget %d)", len(page.Tickets), size, defaultPageBudget)
	if len(page.Tickets) != tickets.DefaultTicketLimit || page.NextCursor == "" {
		t.Errorf("default page has %d tickets, next_cursor %q; want %d and a cursor", len(page.Tickets), page.NextCursor, tickets.DefaultTicketLimit)
	}
	if size > defaultPageBudget {
		t.Errorf("default page is %d bytes of structured content, over the %d-byte budget", size, defaultPageBudget)
	}
	var raw struct {
		Tickets []map[string]any `json:"tickets"`
	}
	if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &raw); err != nil {
		t.Fatal(err)
	}
	if _, has := raw.Tickets[0]["description"]; has {
		t.Errorf("a summary carries the description: %v", raw.Tickets[0])
	}
}

// TestFullPagesStopAt64KiB asks for 100 full tickets of 2 KB each (200 KB):
// each page stops within PageBytes of structured content, and the cursors
// walk every ticket exactly once.
func TestFullPagesStopAt64KiB(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	seedBacklog(t, env, 100, 2000)
	cs := env.Connect(t, writer(t, env))
	args := map[string]any{"detail": "full", "limit": tickets.MaxTicketLimit}
	var keys []string
	pages := 0
	for {
		res := servertest.Call(t, cs, mcptools.ToolListTickets, args)
		if res.IsError {
			t.Fatalf("list_tickets: %s", text(res))
		}
		pages++
		if size := structuredSize(t, res.StructuredContent); size > mcptools.PageBytes {
			t.Errorf("page %d is %d bytes of structured content, over %d", pages, size, mcptools.PageBytes)
		}
		page := servertest.Decode[struct {
			Tickets    []contract.Ticket `json:"tickets"`
			NextCursor string            `json:"next_cursor"`
		}](t, res)
		for _, tk := range page.Tickets {
			if tk.Description == "" {
				t.Fatalf("detail full lists %s without its description", tk.Key)
			}
			keys = append(keys, tk.Key)
		}
		if page.NextCursor == "" {
			break
		}
		args["cursor"] = page.NextCursor
	}
	slices.Sort(keys)
	if len(keys) != 100 || len(slices.Compact(keys)) != 100 || pages < 4 {
		t.Errorf("%d pages listed %d tickets (%d distinct); want 100 over at least 4 pages", pages, len(keys), len(slices.Compact(keys)))
	}
}

// TestListFiltersOverMCP: status as one value or a list, assignee "none",
// updated_since, sort; a bad updated_since or detail is invalid_input.
func TestListFiltersOverMCP(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	ctx := context.Background()
	var keys []string
	for _, title := range []string{"low one", "urgent one", "normal one"} {
		res, err := env.Service.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "reporter"}, ticketstest.OpID(newOperationID(t)), tickets.NewTicket{
			ProjectID: "support", Title: title, Priority: tickets.Priority(strings.Fields(title)[0])})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, res.Ticket.Key)
	}
	since := time.Now().UTC()
	time.Sleep(2 * time.Millisecond)
	for _, u := range []struct {
		key string
		upd tickets.TicketUpdate
	}{
		{keys[0], tickets.TicketUpdate{Assignee: ptr("agent")}},
		{keys[1], tickets.TicketUpdate{Status: ptr(tickets.StatusClosed)}},
	} {
		if _, err := env.Service.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "agent"}, ticketstest.OpID(newOperationID(t)), u.key, u.upd); err != nil {
			t.Fatal(err)
		}
	}
	cs := env.Connect(t, writer(t, env))
	list := func(args map[string]any) []string {
		t.Helper()
		res := servertest.Call(t, cs, mcptools.ToolListTickets, args)
		if res.IsError {
			t.Fatalf("list_tickets %v: %s", args, text(res))
		}
		var got []string
		for _, tk := range servertest.Decode[summaryPage](t, res).Tickets {
			got = append(got, tk.Key)
		}
		return got
	}
	for name, c := range map[string]struct {
		args map[string]any
		want []string
	}{
		"OneStatus":    {map[string]any{"status": "closed"}, []string{keys[1]}},
		"StatusList":   {map[string]any{"status": []string{"open", "closed"}}, []string{keys[2], keys[1], keys[0]}},
		"Unassigned":   {map[string]any{"assignee": "none"}, []string{keys[2], keys[1]}},
		"Mine":         {map[string]any{"assignee": "me"}, []string{keys[0]}},
		"UpdatedSince": {map[string]any{"updated_since": since.Format(time.RFC3339Nano), "sort": "updated_desc"}, []string{keys[1], keys[0]}},
		"Priority":     {map[string]any{"sort": "priority_desc"}, []string{keys[1], keys[2], keys[0]}},
	} {
		if got := list(c.args); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", name, got, c.want)
		}
	}
	for name, args := range map[string]map[string]any{
		"BadSince":  {"updated_since": "yesterday"},
		"BadDetail": {"detail": "everything"},
		"BadSort":   {"sort": "oldest"},
	} {
		t.Run(name, func(t *testing.T) {
			toolError(t, servertest.Call(t, cs, mcptools.ToolListTickets, args), "invalid_input")
		})
	}
}

func ptr[T any](v T) *T { return &v }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
