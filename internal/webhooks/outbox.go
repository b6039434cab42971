package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TicketOutbox returns s as the outbox of tickets.Service: every ticket
// write's event is enqueued in the write's transaction, named and shaped
// here (ticketEvent).
func TicketOutbox(s *Service) tickets.Outbox { return ticketOutbox{s} }

type ticketOutbox struct{ s *Service }

// Enqueue shapes the event only once a subscription wants it: most
// tenants have none, and the payload (the whole ticket as JSON) would be
// built for nothing on every write.
func (o ticketOutbox) Enqueue(tx *gorm.DB, ev tickets.WriteEvent) error {
	if err := o.Check(ev); err != nil {
		return err
	}
	if ev.Unsubscribed {
		return nil // the write's statement read SubscribedSQL as false
	}
	typ := eventTypes[ev.Kind]
	return o.s.enqueue(tx, ev.Tenant, typ, func() (Event, error) {
		e, err := ticketEvent(typ, ev)
		if err != nil {
			return Event{}, err
		}
		return e, e.validate()
	})
}

// Check is what costs nothing to check of an event, on every write,
// subscribed or not (tickets.SubscriptionProbe): Enqueue checks it first,
// and a create that commits in the statement that read SubscribedSQL as
// false, and so never calls Enqueue, calls it before that statement.
func (ticketOutbox) Check(ev tickets.WriteEvent) error {
	typ, ok := eventTypes[ev.Kind]
	if !ok {
		return fmt.Errorf("%w: no event type for a %q write", ErrInvalid, ev.Kind)
	}
	return Event{ID: ev.ID, Tenant: ev.Tenant, Type: typ, OccurredAt: ev.At, Data: json.RawMessage("{}")}.validate()
}

// SubscribedSQL is whether the tenant has an active subscription, which
// Enqueue's read of the subscriptions would find: a write selects it in a
// statement it runs anyway (tickets.SubscriptionProbe). It reads the
// subscriptions earlier than Enqueue would, in the same transaction: as the
// statement starts, which for an update or a comment may be before a wait
// for the ticket's row lock (internal/tickets/update_write.go,
// lockClaimingSQL). A subscription committed while the write is in flight
// is as concurrent with it as one committed just after its read would have
// been, and neither is told.
func (ticketOutbox) SubscribedSQL() string {
	return `EXISTS (SELECT 1 FROM webhook_subscriptions WHERE ` + activeSubscriptionsOf + `)`
}

// activeSubscriptionsOf selects the active subscriptions of the tenant
// @tenant. Enqueue reads them and SubscribedSQL asks whether there are any,
// with this one condition, so the probe can never say none where the read
// would find one.
const activeSubscriptionsOf = `tenant_id = @tenant AND status = '` + SubscriptionActive + `'`

// eventTypes names each kind of ticket write's event (docs/contract.md#webhooks).
var eventTypes = map[tickets.EventKind]string{
	tickets.EventCreated:   TypeTicketCreated,
	tickets.EventUpdated:   TypeTicketUpdated,
	tickets.EventCommented: TypeCommentCreated,
	tickets.EventLinked:    TypeTicketLinked,
	tickets.EventUnlinked:  TypeTicketUnlinked,
}

// ticketData is an event's data: the ticket as the write left it, in the
// shape the API answers with, plus what changed (ticket.updated; the link,
// ticket.linked and ticket.unlinked) or the comment (comment.created), in
// the API's shapes too.
type ticketData struct {
	Ticket  contract.Ticket            `json:"ticket"`
	Changes map[string]contract.Change `json:"changes,omitempty"`
	Comment *contract.Comment          `json:"comment,omitempty"`
}

// ticketEvent is a ticket write's event as the outbox stores and sends it.
func ticketEvent(typ string, ev tickets.WriteEvent) (Event, error) {
	data := ticketData{Ticket: contract.FromTicket(ev.Ticket)}
	if ev.Kind != tickets.EventCreated {
		// ticket.updated's fields, or ticket.linked's link.
		data.Changes = contract.FromChanges(ev.Changes)
	}
	if ev.Comment != nil {
		c := contract.FromComment(*ev.Comment)
		data.Comment = &c
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return Event{}, fmt.Errorf("encode %s event: %w", typ, err)
	}
	return Event{ID: ev.ID, Tenant: ev.Tenant, Type: typ, OperationID: ev.OperationID, TicketID: ev.Ticket.ID,
		OccurredAt: ev.At, Data: raw}, nil
}

// Enqueue writes ev to the outbox inside tx, the transaction of the write
// that caused it: one pending delivery and one queued job per active
// subscription of ev.Tenant that asked for ev.Type. Nothing is sent before
// tx commits, and nothing ever if it rolls back. Errors: ErrInvalid,
// ErrNoTransaction.
func (s *Service) Enqueue(tx *gorm.DB, ev Event) error {
	if err := ev.validate(); err != nil {
		return err
	}
	return s.enqueue(tx, ev.Tenant, ev.Type, func() (Event, error) { return ev, nil })
}

// enqueue is Enqueue for an event of typ for tenant that event makes, and
// is asked to make only when an active subscription wants typ.
func (s *Service) enqueue(tx *gorm.DB, tenant, typ string, event func() (Event, error)) error {
	sqlTx, err := sqlTxOf(tx)
	if err != nil {
		return err
	}
	var subs []subscriptionRow
	err = tx.Session(&gorm.Session{NewDB: true}).Where(activeSubscriptionsOf, sql.Named("tenant", tenant)).
		Order("id").Limit(s.opts.MaxSubscriptions).Find(&subs).Error
	if err != nil {
		return fmt.Errorf("read webhooks of %s: %w", tenant, err)
	}
	var wanted []subscriptionRow
	for _, sub := range subs {
		sd, err := sub.domain()
		if err != nil {
			return err
		}
		if slices.Contains(sd.Events, typ) {
			wanted = append(wanted, sub)
		}
	}
	if len(wanted) == 0 {
		return nil
	}
	ev, err := event()
	if err != nil {
		return err
	}
	body, err := ev.body()
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	var rows []deliveryRow
	for _, sub := range wanted {
		rows = append(rows, deliveryRow{
			TenantID: ev.Tenant, ID: uuid.Must(uuid.NewV7()), SubscriptionID: sub.ID, WebhookID: ev.ID,
			EventType: ev.Type, OperationID: nullUUID(ev.OperationID), TicketID: nullUUID(ev.TicketID),
			Payload: string(body), Status: StatusPending, CreatedAt: now, UpdatedAt: now,
		})
	}
	if err := tx.Session(&gorm.Session{NewDB: true}).Create(&rows).Error; err != nil {
		return fmt.Errorf("insert webhook deliveries: %w", err)
	}
	jobs := make([]river.InsertManyParams, len(rows))
	for i, r := range rows {
		jobs[i] = river.InsertManyParams{Args: deliveryArgs{Tenant: r.TenantID, DeliveryID: r.ID, SubscriptionID: r.SubscriptionID}, InsertOpts: s.insertOpts()}
	}
	if _, err := s.client.InsertManyTx(tx.Statement.Context, sqlTx, jobs); err != nil {
		return fmt.Errorf("queue webhook deliveries: %w", err)
	}
	return nil
}

// OperationDeliveries says what registered webhooks have been told of one
// operation's events, one entry per delivery: s is tickets.Service's
// DeliveryLog.
func (s *Service) OperationDeliveries(ctx context.Context, tenant string, operationID uuid.UUID) ([]tickets.Delivery, error) {
	ds, err := s.DeliveriesFor(ctx, tenant, operationID)
	if err != nil {
		return nil, err
	}
	out := make([]tickets.Delivery, len(ds))
	for i, d := range ds {
		out[i] = tickets.Delivery{WebhookID: d.SubscriptionID, Status: d.Status, Attempts: d.Attempts, LastError: d.LastError}
	}
	return out, nil
}

// PendingDeliveries counts the deliveries of every tenant still waiting in
// the outbox, for the ticketd_outbox_pending gauge.
func PendingDeliveries(ctx context.Context, db *gorm.DB) (int64, error) {
	var n int64
	if err := db.WithContext(ctx).Model(&deliveryRow{}).Where("status = ?", StatusPending).Count(&n).Error; err != nil {
		return 0, fmt.Errorf("count pending webhook deliveries: %w", err)
	}
	return n, nil
}
