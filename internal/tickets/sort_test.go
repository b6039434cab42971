package tickets_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestListSortsAndFilters checks the list controls (docs/contract.md#lists-and-the-context-budget) on both
// dialects, each order walked a page of two at a time so the keyset of
// every order is exercised: updated_desc (a search's default),
// created_desc (a plain list's default), priority_desc; statuses as a set,
// assignee "none" and updated_since.
func TestListSortsAndFilters(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		seedSearch(t, svc) // SUP-1..10, some assigned, SUP-1 resolved last
		// Touch SUP-3 and close SUP-5 after the seed, so the last updated
		// are SUP-5, SUP-3, SUP-1 in that order.
		since := time.Now().UTC()
		time.Sleep(2 * time.Millisecond)
		update(t, svc, tenantA, "SUP-3", tickets.TicketUpdate{Title: ptr("Printer jams again")})
		update(t, svc, tenantA, "SUP-5", tickets.TicketUpdate{Status: ptr(tickets.StatusClosed)})

		cases := []struct {
			name string
			p    tickets.ListTicketsParams
			want []string
		}{
			{"CreatedDescIsTheDefault", tickets.ListTicketsParams{Statuses: []tickets.Status{"resolved", "closed"}}, []string{"SUP-5", "SUP-1"}},
			{"SearchDefaultsToUpdatedDesc", tickets.ListTicketsParams{Query: "printer"}, []string{"SUP-3", "SUP-1", "SUP-10", "SUP-7"}},
			{"UpdatedDesc", tickets.ListTicketsParams{Sort: tickets.SortUpdatedDesc, UpdatedSince: &since}, []string{"SUP-5", "SUP-3"}},
			{"PriorityDesc", tickets.ListTicketsParams{Sort: tickets.SortPriorityDesc, Label: "hardware"}, []string{"SUP-1", "SUP-10", "SUP-3"}},
			{"PriorityDescAll", tickets.ListTicketsParams{Sort: tickets.SortPriorityDesc},
				[]string{"SUP-9", "SUP-4", "SUP-6", "SUP-1", "SUP-8", "SUP-5", "SUP-2", "SUP-10", "SUP-7", "SUP-3"}},
			{"Unassigned", tickets.ListTicketsParams{Assignee: tickets.AssigneeNone}, []string{"SUP-10", "SUP-8", "SUP-5", "SUP-3"}},
			{"UnassignedAndNotClosed", tickets.ListTicketsParams{Assignee: tickets.AssigneeNone, Statuses: []tickets.Status{"open", "in_progress", "resolved"}},
				[]string{"SUP-10", "SUP-8", "SUP-3"}},
			{"StatusesSpelledTwice", tickets.ListTicketsParams{Statuses: []tickets.Status{"closed", " Closed "}}, []string{"SUP-5"}},
		}
		for _, c := range cases {
			c.p.Limit = 2
			var got []string
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("%s: pagination does not end", c.name)
				}
				page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, c.p)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				for _, tk := range page.Tickets {
					got = append(got, tk.Key)
				}
				if c.p.Cursor = page.NextCursor; c.p.Cursor == "" {
					break
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}

		// A cursor is bound to the order and to updated_since as to every
		// filter; a bad sort is invalid_input.
		first, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Sort: tickets.SortUpdatedDesc, Limit: 1})
		if err != nil || first.NextCursor == "" {
			t.Fatal(first, err)
		}
		later := since.Add(time.Hour)
		for name, p := range map[string]tickets.ListTicketsParams{
			"OtherSort":         {Sort: tickets.SortCreatedDesc, Cursor: first.NextCursor},
			"OtherUpdatedSince": {Sort: tickets.SortUpdatedDesc, UpdatedSince: &later, Cursor: first.NextCursor},
			"BadSort":           {Sort: "oldest_first"},
			"BadStatus":         {Statuses: []tickets.Status{"open", "done"}},
			"OverMaxLimit":      {Limit: tickets.MaxTicketLimit + 1},
		} {
			if _, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, p); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		// The default page is DefaultTicketLimit long.
		for range 15 {
			if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
				t.Fatal(err)
			}
		}
		page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{})
		if err != nil || len(page.Tickets) != tickets.DefaultTicketLimit || page.NextCursor == "" {
			t.Fatalf("default page: %d tickets, next %q, %v; want %d and a cursor", len(page.Tickets), page.NextCursor, err, tickets.DefaultTicketLimit)
		}
	})
}
