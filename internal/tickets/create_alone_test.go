package tickets_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// probeOutbox is an outbox with a subscription probe the test controls: a
// tenant is subscribed while it has a project with the ID "subscribed".
type probeOutbox struct {
	mu      sync.Mutex
	told    []tickets.WriteEvent // the subscribed events Enqueue took
	checked int
	refuse  error // Check's answer
	fail    error // Enqueue's answer to a subscribed event
}

func (o *probeOutbox) SubscribedSQL() string {
	return `EXISTS (SELECT 1 FROM projects WHERE tenant_id = @tenant AND id = 'subscribed')`
}

func (o *probeOutbox) Check(tickets.WriteEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.checked++
	return o.refuse
}

func (o *probeOutbox) Enqueue(_ *gorm.DB, ev tickets.WriteEvent) error {
	if ev.Unsubscribed {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.told = append(o.told, ev)
	return o.fail
}

// TestCreateGoesAloneOnlyWithoutASubscriber: a create is one statement only
// while the outbox's probe says the tenant has no subscription, after the
// outbox checked its event. Once the tenant subscribes, the statement that
// finds it writes nothing and the create runs in a transaction, where the
// outbox records the event with the ticket or, failing, rolls it back;
// later creates of that tenant go to the transaction straight away until
// one finds the subscription gone. A create under a parent always takes the
// transaction.
func TestCreateGoesAloneOnlyWithoutASubscriber(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	ctx := context.Background()
	outbox := &probeOutbox{}
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: outbox})
	ticketstest.SeedSupport(t, svc, tenantA)
	caller := tickets.Caller{Tenant: tenantA, Subject: "alice"}
	create := func(in tickets.NewTicket) (tickets.CreateResult, int64, error) {
		t.Helper()
		before := trips.Count()
		res, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(newID()), in)
		return res, trips.Count() - before, err
	}
	mustCreate := func(want int64, in tickets.NewTicket) tickets.CreateResult {
		t.Helper()
		res, n, err := create(in)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if want > 0 && n != want {
			t.Errorf("create %q took %d round trips, want %d", in.Title, n, want)
		}
		return res
	}
	// Both statements prepared: one alone, one in a transaction.
	parent := mustCreate(0, printerTicket())
	child := printerTicket()
	child.Parent = parent.Ticket.Key
	mustCreate(0, child)

	mustCreate(2, printerTicket())
	if len(outbox.told) != 0 || outbox.checked != 2 {
		t.Fatalf("unsubscribed: outbox told %d events, checked %d; want none told, each alone create checked", len(outbox.told), outbox.checked)
	}

	if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: "subscribed", Key: "SUBD", Name: "Subscribed"}); err != nil {
		t.Fatal(err)
	}
	// The fast path, the statement that found the subscription, BEGIN, the
	// statement again, COMMIT; then without the statement that finds it.
	first := mustCreate(5, printerTicket())
	mustCreate(4, printerTicket())
	if len(outbox.told) != 2 || outbox.told[0].Ticket.ID != first.Ticket.ID || outbox.told[0].Ticket.Key != first.Ticket.Key {
		t.Fatalf("subscribed: outbox told %+v, want the two creates' events with their tickets", outbox.told)
	}
	outbox.fail = errors.New("outbox down")
	id := newID()
	if _, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(id), printerTicket()); !errors.Is(err, tickets.ErrUnavailable) {
		t.Fatalf("create with a failing outbox: %v, want ErrUnavailable", err)
	}
	if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
		t.Errorf("operation of a create whose outbox failed: %v, want ErrNotFound (rolled back)", err)
	}
	outbox.fail = nil

	if err := d.Gorm.Exec(`DELETE FROM projects WHERE tenant_id = ? AND id = 'subscribed'`, tenantA).Error; err != nil {
		t.Fatal(err)
	}
	mustCreate(4, printerTicket()) // learns the subscription is gone
	mustCreate(2, printerTicket())
	if n := countTickets(t, d, tenantA); n != 7 {
		t.Errorf("%d tickets, want 7", n)
	}

	outbox.refuse = errors.New("malformed event")
	id = newID()
	if _, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(id), printerTicket()); !errors.Is(err, tickets.ErrUnavailable) {
		t.Fatalf("create whose event the outbox refuses: %v, want ErrUnavailable", err)
	}
	if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
		t.Errorf("operation of a create whose event was refused: %v, want ErrNotFound (checked before the statement)", err)
	}
}
