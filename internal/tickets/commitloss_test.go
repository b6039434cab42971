package tickets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// createPath is one of the ways a fresh create commits on PostgreSQL, with
// the marker that reaches its commit through a fault proxy.
type createPath struct {
	name     string
	parented bool // the create needs a ticket made before, its parent
	// ticket is the create's input, given the parent's key.
	ticket func(parent string) tickets.NewTicket
	// commit arms fault at the create's commit.
	commit func(p *faultproxy.Proxy, fault func(*faultproxy.Proxy, string, ...string) <-chan struct{}) <-chan struct{}
}

// createPaths: a create with nothing else to commit is one statement
// outside a transaction, whose reply is its commit's (the ticket's title is
// among its arguments, and only there); a create under a parent is a
// transaction that ends in COMMIT.
var createPaths = []createPath{
	{
		name:   "OneStatement",
		ticket: func(string) tickets.NewTicket { return printerTicket() },
		commit: func(p *faultproxy.Proxy, fault func(*faultproxy.Proxy, string, ...string) <-chan struct{}) <-chan struct{} {
			return fault(p, printerTicket().Title, dbtest.PostgresStatementEnd)
		},
	},
	{
		name:     "Transaction",
		parented: true,
		ticket: func(parent string) tickets.NewTicket {
			in := printerTicket()
			in.Parent = parent
			return in
		},
		commit: func(p *faultproxy.Proxy, fault func(*faultproxy.Proxy, string, ...string) <-chan struct{}) <-chan struct{} {
			return fault(p, dbtest.PostgresCommit)
		},
	},
}

// startCreate gives a path's test a database behind a fault proxy, a
// service, the parent the path needs (made before any fault is armed), and
// a count of the tickets made since.
func startCreate(t *testing.T, path createPath) (*tickets.Service, *faultproxy.Proxy, func() int64, string) {
	t.Helper()
	d, proxy := dbtest.PostgresViaProxy(t)
	svc := newService(t, d)
	if !path.parented {
		return svc, proxy, func() int64 { return countTickets(t, d, tenantA) }, ""
	}
	parent, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()),
		tickets.NewTicket{ProjectID: "support", Title: "Office move"})
	if err != nil {
		t.Fatal(err)
	}
	return svc, proxy, func() int64 { return countTickets(t, d, tenantA) - 1 }, parent.Ticket.Key
}

// TestCommitReplyLostIsOutcomeUnknown cuts the database connection after the
// commit reached PostgreSQL and was applied, before its reply: the service
// must say "unknown", never "failed", and a retry must find the one ticket.
func TestCommitReplyLostIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, path := range createPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			svc, proxy, created, parent := startCreate(t, path)
			ctx := context.Background()
			id, in := newID(), path.ticket(parent)

			fired := path.commit(proxy, (*faultproxy.Proxy).DropReplyAfter)
			_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			<-fired
			if !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
			}

			st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
			if err != nil || st.Record.Status != operations.StatusSucceeded || st.Ticket == nil {
				t.Fatalf("status after the lost reply = %+v, %v; want succeeded with its ticket", st, err)
			}
			retry, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			if err != nil || !retry.Replayed || retry.Ticket.ID != st.Ticket.ID {
				t.Fatalf("retry = %+v, %v; want replay of %s", retry, err, st.Ticket.ID)
			}
			if n := created(); n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
	}
}

// TestCommitCutIsOutcomeUnknown cuts the connection the moment the commit
// is sent, so PostgreSQL may or may not apply it: whatever happened, the
// answer is "unknown", and retrying with the same ID ends with exactly one
// ticket.
func TestCommitCutIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for _, path := range createPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			svc, proxy, created, parent := startCreate(t, path)
			ctx := context.Background()
			id, in := newID(), path.ticket(parent)

			fired := path.commit(proxy, (*faultproxy.Proxy).CutAfter)
			_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			<-fired
			if !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
			}
			retry, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if n := created(); n != 1 {
				t.Errorf("%d tickets after retry, want 1", n)
			}
			st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
			if err != nil || st.Ticket == nil || st.Ticket.ID != retry.Ticket.ID {
				t.Errorf("status = %+v, %v; want the retry's ticket", st, err)
			}
			if _, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{}); err != nil {
				t.Errorf("the pool did not recover from the cut connection: %v", err)
			}
		})
	}
}

// TestConnectionLostBeforeTheCommit cuts the connection as the create's
// statement is prepared, before anything ran. In a transaction, COMMIT was
// never sent, so the answer is a definite "unavailable, nothing written",
// never "unknown". A create that is one statement cannot tell a connection
// lost then from one lost after its commit (the driver's error is the
// same), so it says "unknown", and the status lookup says nothing ran.
// Either way the same ID then creates the ticket.
func TestConnectionLostBeforeTheCommit(t *testing.T) {
	t.Parallel()
	for _, path := range createPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			svc, proxy, created, parent := startCreate(t, path)
			ctx := context.Background()
			id, in := newID(), path.ticket(parent)

			// The statement's text, which pgx sends once per connection,
			// when it prepares it: no connection has run this create's
			// statement yet (the parent's was the other one).
			fired := proxy.CutAfter(`INSERT INTO "tickets"`)
			_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			<-fired
			switch path.name {
			case "Transaction":
				if !errors.Is(err, tickets.ErrUnavailable) || errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("err = %v, want ErrUnavailable (and not unknown)", err)
				}
			default:
				if !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
				}
			}
			if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
				t.Fatalf("operation after a loss before the commit: %v, want ErrNotFound", err)
			}
			res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			if err != nil || res.Replayed || created() != 1 {
				t.Fatalf("retry = %+v, %v; want a fresh ticket, the only one", res, err)
			}
		})
	}
}
