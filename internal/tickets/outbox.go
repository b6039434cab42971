package tickets

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// Outbox takes a write's event inside the write's own transaction, so that
// what the outside world is told commits or rolls back with the write
// itself. internal/webhooks implements it and owns what the world is told:
// the event names and the JSON, whose ticket is the API's. A nil Outbox
// tells nobody.
type Outbox interface {
	// Enqueue records ev through tx, the ledger's transaction.
	Enqueue(tx *gorm.DB, ev WriteEvent) error
}

// SubscriptionProbe is what an Outbox may offer as well: a boolean SQL
// expression, with the tenant as @tenant, that is false only when Enqueue
// would record nothing for that tenant, whatever the event. On PostgreSQL a
// write selects it in the statement it runs anyway and hands false on as
// WriteEvent.Unsubscribed, which spares the outbox its own read of the
// tenant's subscriptions: one round trip fewer per write for the many
// tenants without webhooks (docs/perf.md).
//
// A create with nothing else to commit runs as one statement outside a
// transaction when the probe says false (createAloneSQL), and then never
// calls Enqueue: Check is what Enqueue checks of every event, subscribed or
// not, and that create calls it before its statement, with the event as it
// stands then (its ticket not yet numbered). That statement is planned
// once per connection with sequential scans off (db.Statement.ByKey), so
// the probe must read through an index that starts with tenant_id.
type SubscriptionProbe interface {
	SubscribedSQL() string
	Check(ev WriteEvent) error
}

// subscribedSQL is the expression a write's statement selects for its
// outbox: the outbox's probe, false for no outbox (which tells nobody), and
// true for one without a probe, which then reads for itself.
func subscribedSQL(o Outbox) string {
	switch o := o.(type) {
	case nil:
		return "false"
	case SubscriptionProbe:
		return "(" + o.SubscribedSQL() + ")"
	default:
		return subscribedUnknown
	}
}

// subscribedUnknown is subscribedSQL for an outbox without a probe.
const subscribedUnknown = "true"

// checkEvent is what the outbox checks of every event (SubscriptionProbe),
// for a write that commits without calling Enqueue; nil without a probe.
func checkEvent(o Outbox, ev WriteEvent) error {
	if p, ok := o.(SubscriptionProbe); ok {
		if err := p.Check(ev); err != nil {
			return fmt.Errorf("%w: check %s event: %v", ErrUnavailable, ev.Kind, err)
		}
	}
	return nil
}

// WriteEvent is one write's history event as the outbox is handed it: what
// happened, to which ticket, under which operation.
type WriteEvent struct {
	ID          uuid.UUID // the history event's ID: the webhook-id every attempt carries
	Tenant      string
	Kind        EventKind // EventCreated, EventUpdated or EventCommented
	OperationID uuid.UUID
	At          time.Time
	Ticket      Ticket   // as the write left it
	Changes     Changes  // EventUpdated: what changed
	Comment     *Comment // EventCommented: the comment added
	// Unsubscribed: the write's own statement found, through the outbox's
	// SubscriptionProbe, that the tenant has no subscription to tell.
	Unsubscribed bool
}

// DeliveryLog answers what registered webhooks have been told of an
// operation's events (webhooks.Service is one), for GetOperation. It is a
// read, kept apart from the Outbox, which writes.
type DeliveryLog interface {
	OperationDeliveries(ctx context.Context, tenant string, operationID uuid.UUID) ([]Delivery, error)
}

// Delivery is what one receiver has been told about an operation's event.
type Delivery struct {
	WebhookID uuid.UUID // the registered webhook (subscription)
	Status    string    // pending, delivered or failed
	Attempts  int
	LastError string
}
