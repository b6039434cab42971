package tickets_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestListWithoutDescriptions checks that a list for summaries gives every
// ticket as the whole list gives it but for an empty description, on both
// dialects: in the default order and by priority, a page at a time, and
// for a search by a word only a description holds (the filter still reads
// the column; the page does not).
func TestListWithoutDescriptions(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		seedSearch(t, svc)
		caller := tickets.Caller{Tenant: tenantA, Subject: "alice"}
		for name, p := range map[string]tickets.ListTicketsParams{
			"Newest":         {Limit: 4},
			"ByPriority":     {Sort: tickets.SortPriorityDesc, Limit: 3},
			"DescriptionHit": {Query: "espresso"},
		} {
			whole, err := svc.ListTickets(ctx, caller, p)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			p.WithoutDescriptions = true
			bare, err := svc.ListTickets(ctx, caller, p)
			if err != nil {
				t.Fatalf("%s without descriptions: %v", name, err)
			}
			if len(whole.Tickets) == 0 || len(bare.Tickets) != len(whole.Tickets) || (bare.NextCursor == "") != (whole.NextCursor == "") {
				t.Fatalf("%s: %d tickets (more: %t) without descriptions, %d (more: %t) with", name,
					len(bare.Tickets), bare.NextCursor != "", len(whole.Tickets), whole.NextCursor != "")
			}
			for i, want := range whole.Tickets {
				if want.Description == "" {
					t.Fatalf("%s: %s has no description to leave out", name, want.Key)
				}
				want.Description = ""
				if !reflect.DeepEqual(bare.Tickets[i], want) {
					t.Errorf("%s: ticket %d without descriptions is %+v, want %+v", name, i, bare.Tickets[i], want)
				}
			}
		}
	})
}
