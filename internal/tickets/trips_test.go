package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestWritesRoundTrips pins what a write costs PostgreSQL once the
// connection has prepared its statements: a fresh create is the fast-path
// read and one statement, outside a transaction, that claims the key and
// inserts ticket and event (no BEGIN, no COMMIT); a fresh update adds the ticket read before the ledger,
// and takes two statements (claim with row lock, change with event) instead
// of five, as does a comment (claim with row lock, comment with event); a
// replay of either is the ticket read and the fast path's record with the
// recorded event or comment joined (a plan made once per connection).
func TestWritesRoundTrips(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	svc := newService(t, d)
	ctx := context.Background()
	caller := tickets.Caller{Tenant: tenantA, Subject: "agent"}
	var created tickets.CreateResult
	for round := range 2 {
		before := trips.Count()
		var err error
		if created, err = svc.CreateTicket(ctx, caller, ticketstest.OpID(newID()), printerTicket()); err != nil {
			t.Fatal(err)
		}
		creates := trips.Count() - before
		title := fmt.Sprintf("Printer fixed, round %d", round)
		before = trips.Count()
		opID := ticketstest.OpID(newID())
		updated, err := svc.UpdateTicket(ctx, caller, opID, created.Ticket.Key, tickets.TicketUpdate{Title: &title})
		if err != nil || updated.Version != 2 || updated.Ticket.Title != title {
			t.Fatalf("update = %+v, %v", updated, err)
		}
		updates := trips.Count() - before
		before = trips.Count()
		replayed, err := svc.UpdateTicket(ctx, caller, opID, created.Ticket.Key, tickets.TicketUpdate{Title: &title})
		if err != nil || !replayed.Replayed || replayed.Version != 2 || !reflect.DeepEqual(replayed.Changes, updated.Changes) ||
			!reflect.DeepEqual(replayed.Ticket, updated.Ticket) {
			t.Fatalf("replay = %+v, %v; want %+v replayed", replayed, err, updated)
		}
		replays := trips.Count() - before
		before = trips.Count()
		commentID := ticketstest.OpID(newID())
		comment, err := svc.AddComment(ctx, caller, commentID, created.Ticket.Key, "Toner replaced.")
		if err != nil {
			t.Fatal(err)
		}
		comments := trips.Count() - before
		before = trips.Count()
		again, err := svc.AddComment(ctx, caller, commentID, created.Ticket.Key, "Toner replaced.")
		if err != nil || !again.Replayed || !reflect.DeepEqual(again.Comment, comment.Comment) {
			t.Fatalf("comment replay = %+v, %v; want %+v replayed", again, err, comment)
		}
		commentReplays := trips.Count() - before
		got, err := svc.GetTicket(ctx, tenantA, created.Ticket.Key)
		if err != nil || got.Version != 2 || got.Title != title {
			t.Errorf("ticket after the update = %+v, %v", got, err)
		}
		if round == 0 {
			continue // statements were prepared on first use
		}
		if creates != 2 {
			t.Errorf("a fresh create took %d round trips, want 2", creates)
		}
		if updates != 6 {
			t.Errorf("a fresh update took %d round trips, want 6", updates)
		}
		if replays != 2 {
			t.Errorf("an update's replay took %d round trips, want 2", replays)
		}
		if comments != 6 || commentReplays != 2 {
			t.Errorf("a fresh comment took %d round trips and its replay %d, want 6 and 2", comments, commentReplays)
		}
	}
}

// TestCreateBehindAHolderOfItsKeyIsInProgress: the claim folded into the
// create statement still waits at most the lock timeout for a call holding
// the same key, answers in progress with nothing written, and the retry
// after the holder committed replays its ticket; whether the waiting create
// runs in a transaction (its outbox reads for itself) or is one statement
// outside one (no outbox: TestWritesRoundTrips), where the claim's
// transaction-local lock timeout lasts for that statement. Were it not to
// apply there, the waiter would wait for the holder, which waits for it.
func TestCreateBehindAHolderOfItsKeyIsInProgress(t *testing.T) {
	t.Parallel()
	for _, alone := range []bool{false, true} {
		t.Run(map[bool]string{false: "Transaction", true: "OneStatement"}[alone], func(t *testing.T) {
			t.Parallel()
			d := dbtest.Postgres(t)
			ctx := context.Background()
			held, release := make(chan struct{}), make(chan struct{})
			holding := tickets.NewService(d.Gorm, tickets.Options{
				Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
					if ev.Ticket.Title == "held" {
						close(held)
						<-release
					}
					return nil
				}),
			})
			ticketstest.SeedSupport(t, holding, tenantA)
			opts := tickets.Options{Ledger: operations.Options{LockTimeout: 200 * time.Millisecond}}
			if !alone {
				opts.Outbox = outboxFunc(func(tickets.WriteEvent) error { return nil })
			}
			waiting := tickets.NewService(d.Gorm, opts)
			caller, id := tickets.Caller{Tenant: tenantA, Subject: "alice"}, newID()
			in := tickets.NewTicket{ProjectID: "support", Title: "held"}
			holder := make(chan error, 1)
			go func() {
				_, err := holding.CreateTicket(ctx, caller, ticketstest.OpID(id), in)
				holder <- err
			}()
			<-held
			_, err := waiting.CreateTicket(ctx, caller, ticketstest.OpID(id), in)
			close(release)
			if !errors.Is(err, operations.ErrInProgress) {
				t.Errorf("a create behind its key's holder: %v, want ErrInProgress", err)
			}
			if err := <-holder; err != nil {
				t.Fatalf("holder: %v", err)
			}
			retry, err := waiting.CreateTicket(ctx, caller, ticketstest.OpID(id), in)
			if err != nil || !retry.Replayed || retry.Ticket.Key != "SUP-1" {
				t.Errorf("retry = %+v, %v; want a replay of SUP-1", retry, err)
			}
			if n := countTickets(t, d, tenantA); n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
	}
}

// TestUpdateBehindAnotherUpdateWaitsPastTheLockTimeout: the lock timeout
// bounds only the wait for a holder of the same key. An update of a ticket
// another update holds locked waits for it as long as it takes (the write
// timeout aside), then applies on top of it.
func TestUpdateBehindAnotherUpdateWaitsPastTheLockTimeout(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	held, release := make(chan struct{}), make(chan struct{})
	svc := tickets.NewService(d.Gorm, tickets.Options{
		Ledger: operations.Options{LockTimeout: 100 * time.Millisecond},
		Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
			if ev.Kind == tickets.EventUpdated && ev.Ticket.Title == "first" {
				close(held)
				<-release
			}
			return nil
		}),
	})
	ticketstest.SeedSupport(t, svc, tenantA)
	caller := tickets.Caller{Tenant: tenantA, Subject: "alice"}
	tk := newTicket(t, svc, tenantA)
	first, second := "first", "second"
	holder := make(chan error, 1)
	go func() {
		_, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Title: &first})
		holder <- err
	}()
	<-held
	time.AfterFunc(500*time.Millisecond, func() { close(release) })
	res, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Title: &second})
	if err != nil || res.Version != 3 || res.Changes["title"].From != first {
		t.Errorf("update behind a held one = %+v, %v; want version 3 changing %q", res, err, first)
	}
	if err := <-holder; err != nil {
		t.Fatalf("holder: %v", err)
	}
}
