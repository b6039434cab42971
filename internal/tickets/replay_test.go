package tickets_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestCreateReplayIsOneQuery: a create_ticket replay reads its record and
// its ticket in one round trip to PostgreSQL, and answers exactly the ticket
// the first call did.
func TestCreateReplayIsOneQuery(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	svc := newService(t, d)
	ctx := context.Background()
	id := newID()
	first, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "agent"}, ticketstest.OpID(id), printerTicket())
	if err != nil {
		t.Fatal(err)
	}
	before := trips.Count()
	again, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "agent"}, ticketstest.OpID(id), printerTicket())
	if err != nil || !again.Replayed {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if n := trips.Count() - before; n != 1 {
		t.Errorf("a replay took %d round trips, want 1", n)
	}
	if !reflect.DeepEqual(again.Ticket, first.Ticket) {
		t.Errorf("replay answered %+v, the first call %+v", again.Ticket, first.Ticket)
	}
}
