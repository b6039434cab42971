package webhooks_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// TestWritesReadSubscriptionsOnlyForSubscribedTenants pins what the
// subscription probe (tickets.SubscriptionProbe) saves on PostgreSQL: for a
// tenant without webhooks, a create, an update and a comment cost the round
// trips they cost with no outbox at all (tickets' TestWritesRoundTrips), the
// probe riding on a statement each makes anyway (a create is then one
// statement outside a transaction); once the tenant subscribes, every write
// reads its subscriptions again and each event is queued, a create in a
// transaction, while another tenant's writes still skip the read.
func TestWritesReadSubscriptionsOnlyForSubscribedTenants(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	ctx := context.Background()
	hooks := newService(t, d, fastOptions(), false)
	svc := ticketService(t, d, hooks, webhooks.TicketOutbox(hooks))
	const other = "globex"
	ticketstest.SeedSupport(t, svc, other)

	// costs makes one create, update and comment for tenant, and returns
	// their round trips and operation IDs.
	costs := func(tenant string) (trips3 [3]int64, ops [3]uuid.UUID) {
		t.Helper()
		caller := tickets.Caller{Tenant: tenant, Subject: "agent"}
		before := trips.Count()
		created, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer jammed"})
		if err != nil {
			t.Fatalf("create for %s: %v", tenant, err)
		}
		trips3[0], ops[0], before = trips.Count()-before, created.OperationID, trips.Count()
		status := tickets.StatusInProgress
		updated, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(uuid.NewString()), created.Ticket.Key, tickets.TicketUpdate{Status: &status})
		if err != nil {
			t.Fatalf("update for %s: %v", tenant, err)
		}
		trips3[1], ops[1], before = trips.Count()-before, updated.OperationID, trips.Count()
		comment, err := svc.AddComment(ctx, caller, ticketstest.OpID(uuid.NewString()), created.Ticket.Key, "Toner replaced.")
		if err != nil {
			t.Fatalf("comment for %s: %v", tenant, err)
		}
		trips3[2], ops[2] = trips.Count()-before, comment.OperationID
		return trips3, ops
	}
	costs(tenant) // statements are prepared on first use
	costs(other)
	if got, _ := costs(tenant); got != [3]int64{2, 6, 6} {
		t.Errorf("unsubscribed tenant: create, update, comment took %v round trips, want [2 6 6]", got)
	}

	subscribe(t, hooks, newRecorder(t).srv.URL+"/hooks") // never sent to: no worker runs
	subscribed, ops := costs(tenant)
	for i, op := range ops {
		ds, err := hooks.DeliveriesFor(ctx, tenant, op)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 1 || ds[0].Status != webhooks.StatusPending {
			t.Errorf("subscribed tenant's write %d: deliveries %+v, want one pending", i, ds)
		}
	}
	if got, _ := costs(other); got != [3]int64{2, 6, 6} {
		t.Errorf("the other tenant, after the first subscribed: %v round trips, want [2 6 6]", got)
	}
	for i, n := range subscribed {
		if n <= [3]int64{2, 6, 6}[i] {
			t.Errorf("subscribed tenant's write %d took %d round trips: it cannot have read the subscriptions and queued its delivery", i, n)
		}
	}
}
