package tracked_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestTrackedWritesMirrorLocallyWhenProven: a tracker-backed create, edit
// and comment whose answers were lost write nothing local while unknown;
// once reconciliation proves them, each writes its ticket, event and one
// webhook event, as a local write does, and the ticket's events are in order.
func TestTrackedWritesMirrorLocallyWhenProven(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newTracked(t, d, false)
		var mu sync.Mutex
		var outbox []tickets.WriteEvent
		svc := tickets.NewService(d.Gorm, tickets.Options{
			Tracked: e.conn,
			Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
				mu.Lock()
				defer mu.Unlock()
				outbox = append(outbox, ev)
				return nil
			})})
		events := func() []tickets.EventKind {
			mu.Lock()
			defer mu.Unlock()
			var kinds []tickets.EventKind
			for _, ev := range outbox {
				kinds = append(kinds, ev.Kind)
			}
			return kinds
		}
		alice := tickets.Caller{Tenant: e.tenant, Subject: "alice"}
		e.gh.FailCreates(githubtest.DropAfterCreate)
		e.gh.FailEdits(githubtest.DropAfterCreate)
		e.gh.FailComments(githubtest.BadGatewayAfterCreate)
		create, edit, comment := newID(), newID(), newID()
		until := func(call func() error) {
			t.Helper()
			if err := call(); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				err := call()
				if err == nil {
					return
				}
				unsettled(t, err)
				if time.Now().After(deadline) {
					t.Fatalf("not settled: %v", err)
				}
				time.Sleep(200 * time.Millisecond)
			}
		}
		var tk tickets.Ticket
		until(func() error {
			res, err := svc.CreateTicket(ctx, alice, ticketstest.OpID(create), ghTicket("Mirror"))
			if err != nil && len(events()) != 0 {
				t.Fatalf("an unproven create wrote a webhook event: %v", events())
			}
			tk = res.Ticket
			return err
		})
		if got := events(); len(got) != 1 || got[0] != tickets.EventCreated {
			t.Fatalf("outbox after the create = %v; want one ticket.created, written when proven", got)
		}
		st := tickets.StatusClosed
		until(func() error {
			_, err := svc.UpdateTicket(ctx, alice, ticketstest.OpID(edit), tk.Key, tickets.TicketUpdate{Status: &st})
			if err != nil && len(events()) != 1 {
				t.Fatalf("an unproven edit wrote a webhook event: %v", events())
			}
			return err
		})
		until(func() error {
			_, err := svc.AddComment(ctx, alice, ticketstest.OpID(comment), tk.Key, "Mirrored.")
			if err != nil && len(events()) != 2 {
				t.Fatalf("an unproven comment wrote a webhook event: %v", events())
			}
			return err
		})
		want := []tickets.EventKind{tickets.EventCreated, tickets.EventUpdated, tickets.EventCommented}
		if got := events(); len(got) != 3 || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("outbox = %v; want %v, one each", got, want)
		}
		page, err := svc.ListEvents(ctx, e.tenant, tk.Key, tickets.ListParams{})
		if err != nil || len(page.Events) != 3 {
			t.Fatalf("events = %+v, %v", page.Events, err)
		}
		for i, op := range []string{create, edit, comment} {
			if ev := page.Events[i]; ev.OperationID.String() != op || ev.Seq != int64(i+1) {
				t.Errorf("event %d = %+v; want operation %s at seq %d", i, ev, op, i+1)
			}
		}
		if page.Events[1].Version != 2 || page.Events[2].Version != 2 {
			t.Errorf("versions %d, %d; want the edit's 2, kept by the comment", page.Events[1].Version, page.Events[2].Version)
		}
	})
}
