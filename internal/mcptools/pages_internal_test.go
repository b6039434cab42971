package mcptools

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestListPageJSONIsWhatMarshalWrites: a list page written from its
// items' measured JSON (ListTicketsOut.pageJSON) is byte for byte what
// json.Marshal writes for it, through the outcome the tool answers with,
// for summaries and full tickets whose text needs escaping, empty pages
// and pages with a cursor; that the outcome does write it by hand; and that
// a page that is not measured JSON is left to json.Marshal.
func TestListPageJSONIsWhatMarshalWrites(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 16, 30, 0, 123456000, time.UTC)
	ticket := func(i int, title string) tickets.Ticket {
		return tickets.Ticket{ID: uuid.MustParse("01950000-0000-7000-8000-00000000000" + string(rune('0'+i))), Key: "SUP-" + string(rune('1'+i)),
			ProjectID: "support", Title: title, Description: "Line 1\nLine <2> & \"3\"\t\u2028end", Priority: tickets.PriorityHigh,
			Status: tickets.StatusOpen, Labels: []string{"a&b", "ünï"}, Reporter: "agent", Assignee: "dev", Version: 3,
			CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
	}
	titles := []string{"Printer <on fire>", "Ünïcödé & ☃", `quote " and \ back`, "plain"}
	encodings := map[string]func(tickets.Ticket) ([]byte, error){
		"summary": contract.SummaryJSON,
		"full":    func(t tickets.Ticket) ([]byte, error) { return json.Marshal(contract.FromTicket(t)) },
	}
	for name, encode := range encodings {
		for _, n := range []int{0, 1, len(titles)} {
			for _, cursor := range []string{"", "eyJrIjoiU1VQLTEifQ<&>"} {
				page := encodedPage[tickets.Ticket]{encode: encode}
				for i := range n {
					if _, err := page.measure(ticket(i, titles[i])); err != nil {
						t.Fatal(err)
					}
				}
				items, err := page.items(n)
				if err != nil {
					t.Fatal(err)
				}
				out := ListTicketsOut{Tickets: items, NextCursor: cursor}
				if _, ok := out.pageJSON(); !ok {
					t.Fatalf("%s page of %d: not written from its measured items", name, n)
				}
				got, err := outcome[ListTicketsOut]{ok: &out}.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(out)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s page of %d, cursor %q:\n got %s\nwant %s", name, n, cursor, got, want)
				}
			}
		}
	}
	// Measured items are compact; one that is not shows which path wrote
	// the page: by hand it stays as it is, json.Marshal would compact it.
	item := json.RawMessage(`{"key": "SUP-1"}`)
	spaced := ListTicketsOut{Tickets: []any{&item}}
	if got, err := (outcome[ListTicketsOut]{ok: &spaced}).MarshalJSON(); err != nil || string(got) != `{"tickets":[{"key": "SUP-1"}]}` {
		t.Errorf("outcome of a page = %s, %v; want it written from its items as they are", got, err)
	}
	for _, out := range []ListTicketsOut{{}, {Tickets: []any{contract.SummaryOf(ticket(0, "not measured"))}}} {
		if b, ok := out.pageJSON(); ok {
			t.Errorf("page %+v written by hand as %s; json.Marshal's to write", out, b)
		}
	}
}
