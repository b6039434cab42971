// Package webhooks tells other systems what happened in ticketd, at least
// once, following Standard Webhooks (https://www.standardwebhooks.com).
//
// A write's events go into a durable outbox inside the write's own
// transaction (Enqueue): one delivery row per matching subscription plus a
// River job that schedules its attempts. Rolled back, nothing is sent;
// committed, a worker on some replica delivers it, retrying with backoff
// and jitter. Every attempt of one delivery carries the same webhook-id (the
// event's ID), so a receiver that deduplicates by it acts once even when an
// answer was lost and the request was sent again. An attempt sent without an
// answer is recorded as unknown: the receiver may have acted.
package webhooks

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/ssrf"
)

// The event types a subscription may ask for.
const (
	TypeTicketCreated  = "ticket.created"
	TypeTicketUpdated  = "ticket.updated"
	TypeCommentCreated = "comment.created"
	TypeTicketLinked   = "ticket.linked"
	TypeTicketUnlinked = "ticket.unlinked"
)

// EventTypes lists every event type, in the order documented.
var EventTypes = []string{TypeTicketCreated, TypeTicketUpdated, TypeCommentCreated, TypeTicketLinked, TypeTicketUnlinked}

// Errors returned by the service; each wraps detail for the caller.
var (
	// ErrInvalid: bad input (URL, events, description, event fields, limits).
	ErrInvalid = errors.New("invalid webhook input")
	// ErrNotFound: no such subscription or delivery for this tenant.
	ErrNotFound = errors.New("webhook not found")
	// ErrConflict: the request does not fit the current state, such as a
	// manual retry of a delivery still pending or of a disabled subscription.
	ErrConflict = errors.New("webhook state conflict")
	// ErrNoTransaction: Enqueue was called with a *gorm.DB outside a
	// transaction, which would break the outbox's atomicity.
	ErrNoTransaction = errors.New("webhooks: Enqueue needs the write's transaction")
)

// Event is one thing that happened, as the write that caused it records it.
type Event struct {
	ID          uuid.UUID       // UUIDv7; the webhook-id every attempt carries
	Tenant      string          // whose subscriptions receive it
	Type        string          // one of EventTypes
	OperationID uuid.UUID       // the write's operation_id, in the body and for DeliveriesFor
	TicketID    uuid.UUID       // the ticket concerned
	OccurredAt  time.Time       // the body's timestamp
	Data        json.RawMessage // a JSON object: the body's data
}

func (ev Event) validate() error {
	switch {
	case ev.ID == uuid.Nil:
		return fmt.Errorf("%w: event ID is required", ErrInvalid)
	case ev.Tenant == "":
		return fmt.Errorf("%w: event tenant is required", ErrInvalid)
	case !slices.Contains(EventTypes, ev.Type):
		return fmt.Errorf("%w: unknown event type %q (want one of %v)", ErrInvalid, ev.Type, EventTypes)
	case ev.OccurredAt.IsZero():
		return fmt.Errorf("%w: event time is required", ErrInvalid)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(ev.Data, &obj); err != nil || obj == nil {
		return fmt.Errorf("%w: event data must be a JSON object", ErrInvalid)
	}
	return nil
}

// payload is the body every attempt sends, fixed when the event is enqueued
// so that each attempt signs the same bytes.
type payload struct {
	Type        string          `json:"type"`
	Timestamp   string          `json:"timestamp"`
	Data        json.RawMessage `json:"data"`
	OperationID *uuid.UUID      `json:"operation_id"`
}

func (ev Event) body() ([]byte, error) {
	p := payload{Type: ev.Type, Timestamp: ev.OccurredAt.UTC().Format(time.RFC3339Nano), Data: ev.Data}
	if ev.OperationID != uuid.Nil {
		p.OperationID = &ev.OperationID
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("encode webhook body: %w", err)
	}
	return b, nil
}

// Options tune delivery. Zero fields take the documented defaults.
type Options struct {
	// RetryMin is the delay before the first retry; later retries double it,
	// with jitter (TICKETD_WEBHOOK_RETRY_MIN, default 5s).
	RetryMin time.Duration
	// RetryMax caps one retry delay (default 1h).
	RetryMax time.Duration
	// MaxAttempts bounds the automatic attempts of one delivery before it is
	// failed (TICKETD_WEBHOOK_MAX_ATTEMPTS, default 12).
	MaxAttempts int
	// AttemptTimeout bounds one request, answer included (default 10s).
	AttemptTimeout time.Duration
	// RescueAfter is how long a delivery job may look running before it is
	// handed to another worker: it recovers the attempts of a replica that
	// died, or whose database connection dropped as it fetched them
	// (TICKETD_WEBHOOK_RESCUE_AFTER; default the longest a live attempt
	// takes: AttemptTimeout, its 2s lease margin and the 10s to record it).
	// Every replica sweeps for such jobs several times per RescueAfter
	// (rescue.go), so they are retried within about a quarter more. Never
	// below AttemptTimeout plus 2s.
	RescueAfter time.Duration
	// PollInterval is how often an idle worker looks for due deliveries
	// (default 500ms): the delay between COMMIT and the first attempt.
	PollInterval time.Duration
	// Concurrency is how many deliveries one replica sends at once
	// (TICKETD_WEBHOOK_CONCURRENCY, default 32).
	Concurrency int
	// TenantShare caps how many of those one tenant's deliveries may hold
	// at once, so a tenant whose receivers hang slows itself only and
	// leaves the rest to everyone else (default three quarters of
	// Concurrency); SubscriptionShare does the same for one subscription
	// (default half). A delivery over its share waits a moment in the queue
	// without spending an attempt, unless its receiver answers quickly and
	// workers are idle: then it borrows one, leaving an eighth free
	// (share.go).
	TenantShare, SubscriptionShare int
	// MaxSubscriptions bounds one tenant's subscriptions (default 20), which
	// also bounds the fan-out of one event.
	MaxSubscriptions int
	// AllowPrivate admits http:// and loopback or private destinations
	// (serve --dev, TICKETD_WEBHOOK_ALLOW_PRIVATE=true).
	AllowPrivate bool
	// Resolver resolves webhook hosts; nil is the system resolver. Tests
	// substitute one to point a name at a chosen address.
	Resolver ssrf.Resolver
	// WorkerID names this replica's worker in the queue (default: River's).
	WorkerID string
	// Logger receives the queue's and workers' logs (default: discarded).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.RetryMin <= 0 {
		o.RetryMin = 5 * time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Hour
	}
	o.RetryMax = max(o.RetryMax, o.RetryMin)
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 12
	}
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = 10 * time.Second
	}
	if o.RescueAfter <= 0 {
		o.RescueAfter = o.AttemptTimeout + leaseMargin + recordTimeout
	}
	o.RescueAfter = max(o.RescueAfter, o.AttemptTimeout+leaseMargin)
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 32
	}
	if o.TenantShare <= 0 {
		o.TenantShare = max(1, o.Concurrency*3/4)
	}
	o.TenantShare = min(o.TenantShare, o.Concurrency)
	if o.SubscriptionShare <= 0 {
		o.SubscriptionShare = max(1, o.Concurrency/2)
	}
	o.SubscriptionShare = min(o.SubscriptionShare, o.TenantShare)
	if o.MaxSubscriptions <= 0 {
		o.MaxSubscriptions = 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Subscription statuses.
const (
	SubscriptionActive   = "active"
	SubscriptionDisabled = "disabled"
)

// Subscription is a receiver registered by a tenant's admin.
type Subscription struct {
	ID             uuid.UUID
	URL            string
	Events         []string
	Description    string
	Status         string // SubscriptionActive or SubscriptionDisabled
	DisabledReason string
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// NewSubscription is what an admin registers.
type NewSubscription struct {
	URL         string
	Events      []string
	Description string
}

// Delivery statuses: the contract's vocabulary (contract.DeliveryStatuses),
// which operation statuses and the REST deliveries show as stored.
const (
	StatusPending   = contract.DeliveryPending
	StatusDelivered = contract.DeliveryDelivered
	StatusFailed    = contract.DeliveryFailed
)

// Attempt outcomes.
const (
	OutcomeDelivered = "delivered"
	OutcomeFailed    = "failed"  // refused before sending, or answered with a failure
	OutcomeUnknown   = "unknown" // sent, no answer: the receiver may have acted
)

// Delivery is one event on its way to one subscription.
type Delivery struct {
	ID             uuid.UUID
	SubscriptionID uuid.UUID
	WebhookID      uuid.UUID
	EventType      string
	OperationID    uuid.UUID
	TicketID       uuid.UUID
	Status         string // StatusPending, StatusDelivered or StatusFailed
	AttemptCount   int
	LastError      string
	LastStatusCode int
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Attempts       []Attempt // oldest first
}

// Attempt is one request made for a delivery.
type Attempt struct {
	Number     int
	Outcome    string // OutcomeDelivered, OutcomeFailed or OutcomeUnknown
	StatusCode int    // 0 without an answer
	Latency    time.Duration
	Error      string
	StartedAt  time.Time
}

// DeliveryStatus is what get_operation_status shows for one delivery of
// an operation's events.
type DeliveryStatus struct {
	WebhookID      uuid.UUID
	SubscriptionID uuid.UUID
	EventType      string
	Status         string
	Attempts       int
	LastError      string
}
