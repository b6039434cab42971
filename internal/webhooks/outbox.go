package webhooks

import (
	"context"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/tickets"
)

// TicketOutbox returns s as the outbox of tickets.Service: every ticket
// write's event is enqueued in the write's transaction, and the operation
// views read its deliveries back.
func TicketOutbox(s *Service) tickets.Outbox { return ticketOutbox{s} }

type ticketOutbox struct{ s *Service }

func (o ticketOutbox) Enqueue(tx *gorm.DB, ev tickets.OutboxEvent) error {
	return o.s.Enqueue(tx, Event(ev))
}

func (o ticketOutbox) Deliveries(ctx context.Context, tenant string, operationID uuid.UUID) ([]tickets.Delivery, error) {
	ds, err := o.s.DeliveriesFor(ctx, tenant, operationID)
	if err != nil {
		return nil, err
	}
	out := make([]tickets.Delivery, len(ds))
	for i, d := range ds {
		out[i] = tickets.Delivery{WebhookID: d.SubscriptionID, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError}
	}
	return out, nil
}
