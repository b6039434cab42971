package tickets_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// countingOutbox counts the events the writes hand it that committed: an
// event handed over by a write that rolled back has no ticket event.
type countingOutbox struct {
	db  *gorm.DB
	mu  sync.Mutex
	ids []string
}

func (o *countingOutbox) Enqueue(_ *gorm.DB, ev tickets.WriteEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ids = append(o.ids, ev.ID.String())
	return nil
}

func (o *countingOutbox) total(tb testing.TB) int {
	tb.Helper()
	o.mu.Lock()
	ids := slices.Clone(o.ids)
	o.mu.Unlock()
	var n int64
	if err := o.db.Table("ticket_events").Where("id IN ?", ids).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return int(n)
}

func newBulkService(tb testing.TB, d *db.DB) (*tickets.Service, *countingOutbox) {
	tb.Helper()
	box := &countingOutbox{db: d.Gorm}
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: box})
	if _, err := svc.CreateProject(context.Background(), tenantA, tickets.Project{ID: "support", Key: "SUP", Name: "Support"}); err != nil {
		tb.Fatalf("seed project: %v", err)
	}
	return svc, box
}

func TestBulkUpdateOfFiftyReplaysRecordedVersions(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc, box := newBulkService(t, d)
		var refs []string
		for range 50 {
			refs = append(refs, newTicket(t, svc, tenantA).Key)
		}
		created := box.total(t)
		op := newID()
		in := tickets.BulkUpdate{Refs: refs, Update: tickets.TicketUpdate{Status: ptr(tickets.StatusInProgress), AddLabels: []string{"triaged"}}}
		first, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(op), in)
		if err != nil || first.Replayed || len(first.Items) != 50 {
			t.Fatalf("bulk = %d items, replayed %v, %v", len(first.Items), first.Replayed, err)
		}
		for i, it := range first.Items {
			if it.Ticket.Key != refs[i] || it.Version != 2 || it.Changes["status"].To != "in_progress" {
				t.Fatalf("item %d = %s v%d %v; want %s at v2 in_progress, in the order named", i, it.Ticket.Key, it.Version, it.Changes, refs[i])
			}
		}
		if got := box.total(t) - created; got != 50 {
			t.Errorf("%d outbox events for 50 changed tickets, want 50", got)
		}
		events := dbtest.CountRows(t, d, "ticket_events", tenantA)
		// Someone changes one ticket after the bulk; the retry (after the
		// reply was lost) must report the bulk's own versions and touch nothing.
		update(t, svc, tenantA, refs[7], tickets.TicketUpdate{Title: ptr("renamed")})
		retry, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(op), in)
		if err != nil || !retry.Replayed || len(retry.Items) != 50 {
			t.Fatalf("retry = %d items, replayed %v, %v", len(retry.Items), retry.Replayed, err)
		}
		for i, it := range retry.Items {
			if it.Version != first.Items[i].Version || it.Changes["status"].To != "in_progress" {
				t.Errorf("replayed item %d = v%d %v; want the recorded v%d", i, it.Version, it.Changes, first.Items[i].Version)
			}
		}
		if retry.Items[7].Ticket.Version != 3 || retry.Items[7].Ticket.Title != "renamed" {
			t.Errorf("replayed item 7 shows ticket v%d %q; want the ticket as it is now (v3, renamed)", retry.Items[7].Ticket.Version, retry.Items[7].Ticket.Title)
		}
		if got := dbtest.CountRows(t, d, "ticket_events", tenantA); got != events+1 {
			t.Errorf("%d events after the replay, want %d (only the rename's)", got, events+1)
		}
		if got := box.total(t) - created; got != 51 {
			t.Errorf("%d outbox events after the replay, want 51", got)
		}
		// The same ID with other tickets is another intent.
		_, err = svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(op), tickets.BulkUpdate{Refs: refs[:3], Update: in.Update})
		if !errors.Is(err, operations.ErrConflict) {
			t.Errorf("same ID, other tickets: %v; want idempotency conflict", err)
		}
	})
}

func TestBulkUpdateStaleVersionWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc, box := newBulkService(t, d)
		a, b, c := newTicket(t, svc, tenantA), newTicket(t, svc, tenantA), newTicket(t, svc, tenantA)
		update(t, svc, tenantA, c.Key, tickets.TicketUpdate{Title: ptr("moved on")}) // c is at v2
		before := box.total(t)
		events := dbtest.CountRows(t, d, "ticket_events", tenantA)
		op := newID()
		in := tickets.BulkUpdate{
			Refs:       []string{a.Key, b.Key, c.Key},
			IfVersions: map[string]int64{a.Key: 1, c.Key: 1},
			Update:     tickets.TicketUpdate{Status: ptr(tickets.StatusClosed)},
		}
		_, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(op), in)
		var vc *tickets.VersionConflictError
		if !errors.As(err, &vc) || vc.Current.Key != c.Key || vc.Current.Version != 2 {
			t.Fatalf("bulk with a stale version = %v; want a version conflict naming %s at v2", err, c.Key)
		}
		for _, tk := range []tickets.Ticket{a, b} {
			got, err := svc.GetTicket(ctx, tenantA, tk.Key)
			if err != nil || got.Status != tickets.StatusOpen || got.Version != 1 {
				t.Errorf("%s after the rejected bulk = %s v%d (%v); want untouched", tk.Key, got.Status, got.Version, err)
			}
		}
		if got := dbtest.CountRows(t, d, "ticket_events", tenantA); got != events {
			t.Errorf("%d events, want %d", got, events)
		}
		if box.total(t) != before {
			t.Errorf("the rejected bulk enqueued %d outbox events", box.total(t)-before)
		}
		if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(op)); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("operation after the rejected bulk: %v; want not found (nothing recorded)", err)
		}
		// Nothing was recorded: the same ID with the right version goes through.
		in.IfVersions[c.Key] = 2
		res, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(op), in)
		if err != nil || len(res.Items) != 3 || res.Items[2].Version != 3 {
			t.Fatalf("bulk with current versions = %+v, %v", res, err)
		}
	})
}

func TestBulkUpdateRejectsBadLists(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc, _ := newBulkService(t, d)
	tk := newTicket(t, svc, tenantA)
	change := tickets.TicketUpdate{Priority: ptr(tickets.PriorityHigh)}
	many := make([]string, tickets.MaxBulk+1)
	for i := range many {
		many[i] = tk.Key
	}
	for name, in := range map[string]tickets.BulkUpdate{
		"none":            {Update: change},
		"too many":        {Refs: many, Update: change},
		"twice":           {Refs: []string{tk.Key, tk.ID.String()}, Update: change},
		"unknown version": {Refs: []string{tk.Key}, IfVersions: map[string]int64{"SUP-999": 1}, Update: change},
		"nothing":         {Refs: []string{tk.Key}},
	} {
		if _, err := svc.BulkUpdateTickets(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), in); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("%s: %v; want invalid input", name, err)
		}
	}
}
