package tickets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestFrozenSessionInsideCreateEnds freezes one database session inside a
// create, just before its COMMIT, as a paused container or a vanished network
// path would: PostgreSQL sees a session idle in its transaction, holding what
// the create locked, and nobody on the other end. The session limits ticketd
// sets itself (db.Session) must end it, so other creates in the same project
// succeed again within 10 s instead of waiting for the kernel's two-hour
// keepalive; the wedged create is then "unknown", and its retry creates the
// one ticket the rollback left uncreated.
func TestFrozenSessionInsideCreateEnds(t *testing.T) {
	t.Parallel()
	d, proxy := dbtest.PostgresViaProxyWith(t, db.Options{Session: db.Session{IdleInTransaction: 2 * time.Second}})
	// An outbox that reads the subscriptions itself keeps every create in
	// a transaction that ends in COMMIT; one that is a single statement
	// outside a transaction never leaves its session inside one.
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: outboxFunc(func(tickets.WriteEvent) error { return nil })})
	ticketstest.SeedSupport(t, svc, tenantA)
	ctx := context.Background()
	if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
		t.Fatal(err)
	}

	frozen := proxy.FreezeBefore(dbtest.PostgresCommit)
	wedgedID := newID()
	wedged := make(chan error, 1)
	go func() {
		_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(wedgedID), printerTicket())
		wedged <- err
	}()
	<-frozen

	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		cctx, cancel := context.WithDeadline(ctx, deadline)
		_, err = svc.CreateTicket(cctx, tickets.Caller{Tenant: tenantA, Subject: "bob"}, ticketstest.OpID(newID()), printerTicket())
		cancel()
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("no create in the project succeeded within 10 s of the freeze: %v", err)
	}

	if err := <-wedged; !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Errorf("wedged create: err = %v, want ErrOutcomeUnknown (its COMMIT was sent, never answered)", err)
	}
	retry, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(wedgedID), printerTicket())
	if err != nil || retry.Replayed {
		t.Fatalf("retry of the wedged create = %+v, %v; want a first success (the server rolled it back)", retry, err)
	}
	if n := countTickets(t, d, tenantA); n != 3 {
		t.Errorf("%d tickets, want 3", n)
	}
}
