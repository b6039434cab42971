package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// The outbox event types, one per write (docs/contract.md#webhooks).
const (
	OutboxTicketCreated  = "ticket.created"
	OutboxTicketUpdated  = "ticket.updated"
	OutboxCommentCreated = "comment.created"
)

// Outbox takes a write's event inside the write's own transaction, so that
// what the outside world is told commits or rolls back with the write
// itself (internal/webhooks implements it). A nil Outbox tells nobody.
type Outbox interface {
	// Enqueue records ev through tx, the ledger's transaction.
	Enqueue(tx *gorm.DB, ev OutboxEvent) error
	// Deliveries says what became of one operation's events.
	Deliveries(ctx context.Context, tenant string, operationID uuid.UUID) ([]Delivery, error)
}

// OutboxEvent is one write's event as the outside world receives it.
type OutboxEvent struct {
	ID          uuid.UUID // the ticket event's ID: the webhook-id every attempt carries
	Tenant      string
	Type        string // OutboxTicketCreated, OutboxTicketUpdated or OutboxCommentCreated
	OperationID uuid.UUID
	TicketID    uuid.UUID
	OccurredAt  time.Time
	Data        json.RawMessage // a JSON object
}

// Delivery is what one receiver has been told about an operation's event.
type Delivery struct {
	WebhookID uuid.UUID // the registered webhook (subscription)
	Status    string    // pending, delivered or failed
	Attempts  int
	LastError string
}

// outboxTicket is a ticket as an event's data carries it.
type outboxTicket struct {
	ID          uuid.UUID `json:"id"`
	Key         string    `json:"key"`
	ProjectID   string    `json:"project_id"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Priority    Priority  `json:"priority"`
	Status      Status    `json:"status"`
	Labels      []string  `json:"labels"`
	Assignee    string    `json:"assignee,omitempty"`
	Reporter    string    `json:"reporter"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

func toOutboxTicket(t Ticket) outboxTicket {
	labels := t.Labels
	if labels == nil {
		labels = []string{}
	}
	return outboxTicket{
		ID: t.ID, Key: t.Key, ProjectID: t.ProjectID, Title: t.Title, Description: t.Description,
		Priority: t.Priority, Status: t.Status, Labels: labels, Assignee: t.Assignee, Reporter: t.Reporter,
		Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
	}
}

type outboxChange struct {
	From any `json:"from"`
	To   any `json:"to"`
}

type outboxComment struct {
	ID        uuid.UUID `json:"id"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// outboxData is an event's data: the ticket as the write left it, plus what
// changed (ticket.updated) or the comment (comment.created).
type outboxData struct {
	Ticket  outboxTicket            `json:"ticket"`
	Changes map[string]outboxChange `json:"changes,omitempty"`
	Comment *outboxComment          `json:"comment,omitempty"`
}

// enqueue hands a write's event to the outbox inside the write's
// transaction; with no outbox it does nothing. A failure rolls the write
// back: a committed write is always told.
func (s *Service) enqueue(tx *gorm.DB, typ string, eventID, opID uuid.UUID, tenant string, at time.Time, data outboxData) error {
	if s.outbox == nil {
		return nil
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", typ, err)
	}
	err = s.outbox.Enqueue(tx, OutboxEvent{
		ID: eventID, Tenant: tenant, Type: typ, OperationID: opID, TicketID: data.Ticket.ID, OccurredAt: at, Data: raw,
	})
	if err != nil {
		return fmt.Errorf("%w: enqueue %s event: %v", ErrUnavailable, typ, err)
	}
	return nil
}

func outboxChanges(c Changes) map[string]outboxChange {
	out := make(map[string]outboxChange, len(c))
	for field, ch := range c {
		out[field] = outboxChange(ch)
	}
	return out
}
