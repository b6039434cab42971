package tickets_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// outboxFunc is an Outbox whose Enqueue runs a function inside the write's
// transaction: the test's way to see a create's number before COMMIT, to
// fail the write after the number was taken, or to hold it open.
type outboxFunc func(ev tickets.WriteEvent) error

func (f outboxFunc) Enqueue(_ *gorm.DB, ev tickets.WriteEvent) error { return f(ev) }

// eventTicket reads the ticket's title and number from a created event.
func eventTicket(tb testing.TB, ev tickets.WriteEvent) (title string, number int64) {
	tb.Helper()
	return ev.Ticket.Title, keyNumber(tb, ev.Ticket.Key)
}

func keyNumber(tb testing.TB, key string) int64 {
	tb.Helper()
	_, digits, ok := strings.Cut(key, "-")
	n, err := strconv.ParseInt(digits, 10, 64)
	if !ok || err != nil {
		tb.Fatalf("ticket key %q has no number", key)
	}
	return n
}

// TestRolledBackCreateNeverReusesItsNumber fails a create after it took its
// number (its event cannot be recorded, so the whole write rolls back). On
// PostgreSQL the number came from the project's sequence and stays spent:
// the next create gets a later one, and the gap is where the failed one
// was. SQLite, one writer at a time, rolls next_number back with the rest.
func TestRolledBackCreateNeverReusesItsNumber(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var failed int64
		svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
			if title, n := eventTicket(t, ev); title == "doomed" {
				failed = n
				return errors.New("outbox refused the event")
			}
			return nil
		})})
		if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: "support", Key: "SUP", Name: "Support"}); err != nil {
			t.Fatal(err)
		}
		first, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tickets.NewTicket{ProjectID: "support", Title: "before"})
		if err != nil {
			t.Fatal(err)
		}
		doomedID := newID()
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(doomedID), tickets.NewTicket{ProjectID: "support", Title: "doomed"}); !errors.Is(err, tickets.ErrUnavailable) {
			t.Fatalf("doomed create: %v, want ErrUnavailable", err)
		}
		if failed != keyNumber(t, first.Ticket.Key)+1 {
			t.Fatalf("the doomed create took number %d, want %d (right after %s)", failed, keyNumber(t, first.Ticket.Key)+1, first.Ticket.Key)
		}
		if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(doomedID)); err == nil {
			t.Error("the rolled-back create left an operation record")
		}
		next, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tickets.NewTicket{ProjectID: "support", Title: "after"})
		if err != nil {
			t.Fatal(err)
		}
		want := failed + 1
		if d.Dialect == db.SQLite {
			want = failed
		}
		if got := keyNumber(t, next.Ticket.Key); got != want {
			t.Errorf("the create after the rollback got number %d, want %d (the rolled-back one took %d)", got, want, failed)
		}
		if n := countTickets(t, d, tenantA); n != 2 {
			t.Errorf("%d tickets, want 2", n)
		}
	})
}

// TestCreatesInOneProjectDoNotWaitForEachOther holds one create's
// transaction open after it took its number and shows that another create
// in the same project commits meanwhile. With the number allocated by
// locking the project row, the second would wait for the first's COMMIT
// and give up at the ledger's lock timeout (operation_in_progress).
// PostgreSQL only: SQLite runs one write transaction at a time by design.
func TestCreatesInOneProjectDoNotWaitForEachOther(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	held, release := make(chan int64, 1), make(chan struct{})
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
		if title, n := eventTicket(t, ev); title == "held" {
			held <- n
			<-release
		}
		return nil
	})})
	if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: "support", Key: "SUP", Name: "Support"}); err != nil {
		t.Fatal(err)
	}
	heldDone := make(chan error, 1)
	go func() {
		_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tickets.NewTicket{ProjectID: "support", Title: "held"})
		heldDone <- err
	}()
	heldNumber := <-held
	other, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bob"}, ticketstest.OpID(newID()), tickets.NewTicket{ProjectID: "support", Title: "not held"})
	close(release)
	if err != nil {
		t.Fatalf("a create beside an open one in the same project: %v", err)
	}
	if err := <-heldDone; err != nil {
		t.Fatalf("held create: %v", err)
	}
	if got := keyNumber(t, other.Ticket.Key); got != heldNumber+1 {
		t.Errorf("the second create got number %d, want %d (the held one took %d)", got, heldNumber+1, heldNumber)
	}
	if got, err := svc.GetTicket(ctx, tenantA, "SUP-"+strconv.FormatInt(heldNumber, 10)); err != nil || got.Title != "held" {
		t.Errorf("the held ticket = %+v, %v; want it committed under its number", got, err)
	}
}
