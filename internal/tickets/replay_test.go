package tickets_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestCreateReplayIsOneQuery: a create_ticket replay on PostgreSQL reads its
// record with its ticket joined, one round trip once the statement is
// prepared (its plan made once per connection: docs/perf.md, "Planning,
// not executing"), and answers exactly the ticket the first call did.
func TestCreateReplayIsOneQuery(t *testing.T) {
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
		if n := trips.Count() - before; round == 1 && n != 1 {
			t.Errorf("a replay took %d round trips, want 1", n)
		}
		if !reflect.DeepEqual(again.Ticket, first.Ticket) {
			t.Errorf("replay answered %+v, the first call %+v", again.Ticket, first.Ticket)
		}
	}
}
