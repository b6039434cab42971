package tickets_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// bigText is the largest text a field may hold with the most expensive JSON:
// each '<' is escaped to six bytes.
func bigText(tag int) string {
	return fmt.Sprintf("%05d", tag) + strings.Repeat("<", tickets.MaxDescription-5)
}

// walk pages through a list with the largest limit, checking each page's
// JSON stays within the budget, and returns the IDs it saw in order.
func walk[T any](tb testing.TB, page func(cursor string) ([]T, string, error), id func(T) string) (ids []string, pages int) {
	tb.Helper()
	for cursor := ""; ; {
		items, next, err := page(cursor)
		if err != nil {
			tb.Fatal(err)
		}
		b, err := json.Marshal(items)
		if err != nil {
			tb.Fatal(err)
		}
		if len(b) > tickets.MaxPageBytes {
			tb.Errorf("page %d holds %d bytes of JSON, over the %d budget", pages, len(b), tickets.MaxPageBytes)
		}
		if len(items) == 0 && next != "" {
			tb.Fatal("an empty page with a next cursor")
		}
		for _, it := range items {
			ids = append(ids, id(it))
		}
		pages++
		if cursor = next; cursor == "" {
			return ids, pages
		}
	}
}

func assertEachOnce(tb testing.TB, what string, got, want []string) {
	tb.Helper()
	if !slices.Equal(got, want) {
		tb.Errorf("%s: visited %d items, want each of %d exactly once, in order", what, len(got), len(want))
	}
}

// TestPagesStayWithinByteBudget fills tickets, comments and history with the
// largest rows there can be: every list stops its pages at MaxPageBytes and
// still visits every row exactly once.
func TestPagesStayWithinByteBudget(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		const n = 10 // about 120 KB of JSON each: two pages of tickets and of comments
		var ticketIDs, commentIDs []string
		for i := range n {
			in := printerTicket()
			in.Description = bigText(i)
			res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), in)
			if err != nil {
				t.Fatal(err)
			}
			ticketIDs = append([]string{res.Ticket.ID.String()}, ticketIDs...) // newest first
		}
		target := "SUP-1"
		eventIDs := []string{}
		for i := range n {
			c, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "bob"}, ticketstest.OpID(newID()), target, bigText(i))
			if err != nil {
				t.Fatal(err)
			}
			commentIDs = append(commentIDs, c.Comment.ID.String())
			// Each description change records both texts: about 240 KB of JSON per event.
			update(t, svc, tenantA, target, tickets.TicketUpdate{Description: ptr(bigText(100 + i))})
		}
		events, err := d.Gorm.Raw("SELECT id FROM ticket_events WHERE ticket_id = (SELECT id FROM tickets WHERE key = ? AND tenant_id = ?) ORDER BY seq",
			target, tenantA).Rows()
		if err != nil {
			t.Fatal(err)
		}
		for events.Next() {
			var id string
			if err := events.Scan(&id); err != nil {
				t.Fatal(err)
			}
			eventIDs = append(eventIDs, id)
		}
		if err := events.Close(); err != nil {
			t.Fatal(err)
		}

		got, pages := walk(t, func(c string) ([]tickets.Ticket, string, error) {
			p, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: tickets.MaxTicketLimit, Cursor: c})
			return p.Tickets, p.NextCursor, err
		}, func(tk tickets.Ticket) string { return tk.ID.String() })
		assertEachOnce(t, "tickets", got, ticketIDs)
		if pages < 2 {
			t.Errorf("tickets fit in %d page; the budget did not cut it", pages)
		}

		got, pages = walk(t, func(c string) ([]tickets.Comment, string, error) {
			p, err := svc.ListComments(ctx, tenantA, target, tickets.ListParams{Limit: tickets.MaxLimit, Cursor: c})
			return p.Comments, p.NextCursor, err
		}, func(c tickets.Comment) string { return c.ID.String() })
		assertEachOnce(t, "comments", got, commentIDs)
		if pages < 2 {
			t.Errorf("comments fit in %d page; the budget did not cut it", pages)
		}

		got, pages = walk(t, func(c string) ([]tickets.Event, string, error) {
			p, err := svc.ListEvents(ctx, tenantA, target, tickets.ListParams{Limit: tickets.MaxLimit, Cursor: c})
			return p.Events, p.NextCursor, err
		}, func(e tickets.Event) string { return e.ID.String() })
		assertEachOnce(t, "events", got, eventIDs)
		if len(eventIDs) != 1+2*n || pages < 3 {
			t.Errorf("%d events in %d pages; want %d events over at least 3 pages", len(eventIDs), pages, 1+2*n)
		}
	})
}

// TestListReadsInBatches lists more rows than one read fetches: the page
// joins the batches without a gap or a repeat, and stops at the limit.
func TestListReadsInBatches(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		const n = 70 // over two batches of 32
		var want []string
		for i := range n {
			in := printerTicket()
			in.Title = fmt.Sprintf("ticket %d", i)
			res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), in)
			if err != nil {
				t.Fatal(err)
			}
			want = append([]string{res.Ticket.Key}, want...)
		}
		all, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: tickets.MaxTicketLimit})
		if err != nil || all.NextCursor != "" {
			t.Fatalf("one page of everything: next %q, %v", all.NextCursor, err)
		}
		var got []string
		for _, tk := range all.Tickets {
			got = append(got, tk.Key)
		}
		assertEachOnce(t, "one page", got, want)

		first, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: 65})
		if err != nil || len(first.Tickets) != 65 || first.NextCursor == "" {
			t.Fatalf("first page: %d tickets, next %q, %v; want 65 and a cursor", len(first.Tickets), first.NextCursor, err)
		}
		rest, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: 65, Cursor: first.NextCursor})
		if err != nil || rest.NextCursor != "" {
			t.Fatalf("second page: next %q, %v; want the last page", rest.NextCursor, err)
		}
		got = got[:0]
		for _, tk := range append(first.Tickets, rest.Tickets...) {
			got = append(got, tk.Key)
		}
		assertEachOnce(t, "two pages", got, want)
	})
}
