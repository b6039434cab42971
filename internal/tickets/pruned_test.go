package tickets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestRetryAfterPruneAppliesNothing retries an update and a comment after
// their operation records were pruned: each write's own row keeps its
// operation ID unique per tenant (migration 00005), so the retry is refused
// with ErrExpired and nothing is applied a second time, even when the
// ticket changed in between (a re-applied update would undo that change).
func TestRetryAfterPruneAppliesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		created, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), printerTicket())
		if err != nil {
			t.Fatal(err)
		}
		key := created.Ticket.Key
		first, later := "Printer smoking", "Printer fixed"
		updateID, commentID := newID(), newID()
		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(updateID), key, tickets.TicketUpdate{Title: &first}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bob"}, ticketstest.OpID(newID()), key, tickets.TicketUpdate{Title: &later}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(commentID), key, "On it."); err != nil {
			t.Fatal(err)
		}
		if err := d.Gorm.Exec("DELETE FROM operations").Error; err != nil {
			t.Fatal(err)
		}

		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(updateID), key, tickets.TicketUpdate{Title: &first}); !errors.Is(err, operations.ErrExpired) {
			t.Errorf("update retried after prune: %v, want ErrExpired", err)
		}
		if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(commentID), key, "On it."); !errors.Is(err, operations.ErrExpired) {
			t.Errorf("comment retried after prune: %v, want ErrExpired", err)
		}
		got, err := svc.GetTicket(ctx, tenantA, key)
		if err != nil || got.Title != later || got.Version != 3 {
			t.Errorf("ticket = %+v, %v; want the later title at version 3, untouched by the retry", got, err)
		}
		if n := countRows(t, d, "comments", "tenant_id = ?", tenantA); n != 1 {
			t.Errorf("%d comments, want 1", n)
		}
		if n := countRows(t, d, "ticket_events", "tenant_id = ? AND operation_id = ?", tenantA, updateID); n != 1 {
			t.Errorf("%d events for the update's operation ID, want 1", n)
		}
		// The refusals rolled back whole: the next write takes the next seq.
		if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), key, "Fixed."); err != nil {
			t.Errorf("a new comment after the refused retries: %v", err)
		}
	})
}
