package tickets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestCommitReplyLostIsOutcomeUnknown cuts the database connection after
// COMMIT reached PostgreSQL and was applied, before its reply: the service must
// say "unknown", never "failed", and a retry must find the one ticket.
func TestCommitReplyLostIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	d, proxy := dbtest.PostgresViaProxy(t)
	svc := newService(t, d)
	ctx := context.Background()
	id := newID()

	fired := proxy.DropReplyAfter(dbtest.PostgresCommit)
	_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	<-fired
	if !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
	}

	st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
	if err != nil || st.Record.Status != operations.StatusSucceeded || st.Ticket == nil {
		t.Fatalf("status after the lost reply = %+v, %v; want succeeded with its ticket", st, err)
	}
	retry, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	if err != nil || !retry.Replayed || retry.Ticket.ID != st.Ticket.ID {
		t.Fatalf("retry = %+v, %v; want replay of %s", retry, err, st.Ticket.ID)
	}
	if n := countTickets(t, d, tenantA); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestCommitCutIsOutcomeUnknown cuts the connection the moment COMMIT is
// sent, so PostgreSQL may or may not apply it: whatever happened, the answer
// is "unknown", and retrying with the same ID ends with exactly one ticket.
func TestCommitCutIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	d, proxy := dbtest.PostgresViaProxy(t)
	svc := newService(t, d)
	ctx := context.Background()
	id := newID()

	fired := proxy.CutAfter(dbtest.PostgresCommit)
	_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	<-fired
	if !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
	}
	retry, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if n := countTickets(t, d, tenantA); n != 1 {
		t.Errorf("%d tickets after retry, want 1", n)
	}
	st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
	if err != nil || st.Ticket == nil || st.Ticket.ID != retry.Ticket.ID {
		t.Errorf("status = %+v, %v; want the retry's ticket", st, err)
	}
	if _, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{}); err != nil {
		t.Errorf("the pool did not recover from the cut connection: %v", err)
	}
}

// TestConnectionLostBeforeCommitIsUnavailable cuts the connection while the
// ticket is being inserted, before COMMIT: PostgreSQL rolls everything back,
// so the answer is a definite "unavailable, nothing written", never "unknown",
// and the same ID then creates the ticket with the number the rollback freed.
func TestConnectionLostBeforeCommitIsUnavailable(t *testing.T) {
	t.Parallel()
	d, proxy := dbtest.PostgresViaProxy(t)
	svc := newService(t, d)
	ctx := context.Background()
	id := newID()

	fired := proxy.CutAfter(`INSERT INTO "tickets"`)
	_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	<-fired
	if !errors.Is(err, tickets.ErrUnavailable) || errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("err = %v, want ErrUnavailable (and not unknown)", err)
	}
	if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
		t.Fatalf("operation after a pre-commit loss: %v, want ErrNotFound", err)
	}
	res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
	if err != nil || res.Replayed || res.Ticket.Key != "SUP-1" {
		t.Fatalf("retry = %+v, %v; want a fresh SUP-1", res, err)
	}
}
