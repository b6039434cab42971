package webhooks_test

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// TestBulkUpdateIsOneEventPerChangedTicket: a bulk update tells receivers
// once per ticket it changed (a ticket already as asked has no news), each
// event with that ticket's own event ID, and a replay tells nobody again.
func TestBulkUpdateIsOneEventPerChangedTicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		rec := newRecorder(t)
		hooks := newService(t, d, fastOptions(), true)
		sub, secret := subscribe(t, hooks, rec.srv.URL+"/hooks")
		rec.verifyWith(secret)
		svc := ticketService(t, d, hooks, webhooks.TicketOutbox(hooks))
		var refs []string
		for range 3 {
			res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer on fire"})
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, res.Ticket.Key)
		}
		working := tickets.StatusInProgress
		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(uuid.NewString()), refs[1], tickets.TicketUpdate{Status: &working}); err != nil {
			t.Fatal(err)
		}
		op := uuid.NewString()
		in := tickets.BulkUpdate{Refs: refs, Update: tickets.TicketUpdate{Status: &working}}
		res, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(op), in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(op), in); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "both deliveries delivered", func() bool {
			ds, err := hooks.DeliveriesFor(ctx, tenant, res.OperationID)
			if err != nil {
				t.Fatal(err)
			}
			return len(ds) == 2 && ds[0].Status == webhooks.StatusDelivered && ds[1].Status == webhooks.StatusDelivered
		})
		st, err := svc.GetOperation(ctx, tenant, ticketstest.OpID(op))
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Deliveries) != 2 {
			t.Fatalf("bulk deliveries = %+v; want 2, one per changed ticket", st.Deliveries)
		}
		var ids []string
		if err := d.Gorm.Table("webhook_deliveries").Where("tenant_id = ? AND operation_id = ? AND subscription_id = ?", tenant, op, sub.ID.String()).
			Order("webhook_id").Pluck("webhook_id", &ids).Error; err != nil {
			t.Fatal(err)
		}
		var events []string
		if err := d.Gorm.Table("ticket_events").Where("tenant_id = ? AND operation_id = ? AND changes <> '{}'", tenant, op).
			Order("id").Pluck("id", &events).Error; err != nil {
			t.Fatal(err)
		}
		if len(ids) != 2 || len(events) != 2 || ids[0] != events[0] || ids[1] != events[1] {
			t.Errorf("webhook-ids %v, changed tickets' events %v; want the same two", ids, events)
		}
	})
}
