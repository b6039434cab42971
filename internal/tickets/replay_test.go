package tickets_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestCreateReplayIsTwoQueries: a create_ticket replay on PostgreSQL reads
// its record (a plan made once per connection) and then its ticket, two
// round trips once their statements are prepared, and answers exactly the
// ticket the first call did. One statement with the ticket joined cost
// PostgreSQL more to plan on every execution than the second round trip
// costs (docs/perf.md, "Planning, not executing").
func TestCreateReplayIsTwoQueries(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	svc := newService(t, d)
	ctx := context.Background()
	caller := tickets.Caller{Tenant: tenantA, Subject: "agent"}
	id := newID()
	first, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(id), printerTicket())
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		before := trips.Count()
		again, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(id), printerTicket())
		if err != nil || !again.Replayed {
			t.Fatalf("replay = %+v, %v", again, err)
		}
		if n := trips.Count() - before; round == 1 && n != 2 {
			t.Errorf("a replay took %d round trips, want 2", n)
		}
		if !reflect.DeepEqual(again.Ticket, first.Ticket) {
			t.Errorf("replay answered %+v, the first call %+v", again.Ticket, first.Ticket)
		}
	}
}
