package rest

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/webhooks"
)

// NewWebhook is the body of POST /api/v1/webhooks.
type NewWebhook struct {
	URL         string   `json:"url" jsonschema:"https URL that receives the deliveries (loopback http only in development)"`
	Events      []string `json:"events" jsonschema:"event types to receive: ticket.created, ticket.updated, comment.created"`
	Description string   `json:"description,omitempty"`
}

// Webhook is a registered webhook. Secret is present only in the answer to
// its registration: it is shown once.
type Webhook struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Description    string    `json:"description,omitempty"`
	Status         string    `json:"status" jsonschema:"active, or disabled after the receiver answered 410"`
	DisabledReason string    `json:"disabled_reason,omitempty"`
	Secret         string    `json:"secret,omitempty" jsonschema:"whsec_ + base64 signing key; shown only when the webhook is registered"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// WebhookList is the answer of GET /api/v1/webhooks.
type WebhookList struct {
	Webhooks []Webhook `json:"webhooks"`
}

// WebhookDelivery is one event on its way to one webhook, with its attempts.
type WebhookDelivery struct {
	ID             string           `json:"id"`
	WebhookID      string           `json:"webhook_id" jsonschema:"the registered webhook"`
	EventID        string           `json:"event_id" jsonschema:"the webhook-id header of every attempt: the receiver's idempotency key"`
	EventType      string           `json:"event_type"`
	OperationID    string           `json:"operation_id,omitempty"`
	TicketID       string           `json:"ticket_id,omitempty"`
	Status         string           `json:"status" jsonschema:"pending, delivered or failed"`
	Attempts       int              `json:"attempts"`
	LastError      string           `json:"last_error,omitempty"`
	LastStatusCode int              `json:"last_status_code,omitempty"`
	CreatedAt      time.Time        `json:"created_at"`
	UpdatedAt      time.Time        `json:"updated_at"`
	AttemptLog     []WebhookAttempt `json:"attempt_log" jsonschema:"every request made, oldest first"`
}

// WebhookAttempt is one request made for a delivery.
type WebhookAttempt struct {
	Number     int       `json:"number"`
	Outcome    string    `json:"outcome" jsonschema:"delivered, failed, or unknown (sent without an answer: the receiver may have acted)"`
	StatusCode int       `json:"status_code,omitempty"`
	LatencyMS  int64     `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"started_at"`
}

// WebhookDeliveryList is the answer of GET /api/v1/webhooks/{id}/deliveries.
type WebhookDeliveryList struct {
	Deliveries []WebhookDelivery `json:"deliveries"`
}

func toWebhook(s webhooks.Subscription, secret string) Webhook {
	return Webhook{
		ID: s.ID.String(), URL: s.URL, Events: s.Events, Description: s.Description, Status: s.Status,
		DisabledReason: s.DisabledReason, Secret: secret, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
	}
}

func toDelivery(d webhooks.Delivery) WebhookDelivery {
	out := WebhookDelivery{
		ID: d.ID.String(), WebhookID: d.SubscriptionID.String(), EventID: d.WebhookID.String(), EventType: d.EventType,
		Status: d.Status, Attempts: d.AttemptCount, LastError: d.LastError, LastStatusCode: d.LastStatusCode,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, AttemptLog: make([]WebhookAttempt, len(d.Attempts)),
	}
	if d.OperationID != uuid.Nil {
		out.OperationID = d.OperationID.String()
	}
	if d.TicketID != uuid.Nil {
		out.TicketID = d.TicketID.String()
	}
	for i, a := range d.Attempts {
		out.AttemptLog[i] = WebhookAttempt{
			Number: a.Number, Outcome: a.Outcome, StatusCode: a.StatusCode, LatencyMS: a.Latency.Milliseconds(),
			Error: a.Error, StartedAt: a.StartedAt,
		}
	}
	return out
}

// webhookID parses a path parameter naming a webhook or a delivery; a
// malformed one is invalid input, not a lookup.
func webhookID(r *http.Request, param string) (uuid.UUID, error) {
	id, err := uuid.Parse(chi.URLParam(r, param))
	if err != nil {
		return uuid.Nil, invalid(param, "is not a UUID")
	}
	return id, nil
}

// createWebhook is POST /api/v1/webhooks (tickets:admin).
func (a *api) createWebhook(w http.ResponseWriter, r *http.Request) {
	var body NewWebhook
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, "")
		return
	}
	sub, secret, err := a.hooks.CreateSubscription(r.Context(), principal(r).Tenant, webhooks.NewSubscription{
		URL: body.URL, Events: body.Events, Description: body.Description,
	})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	w.Header().Set("Location", "/api/v1/webhooks/"+sub.ID.String())
	writeJSON(w, http.StatusCreated, toWebhook(sub, secret))
}

// listWebhooks is GET /api/v1/webhooks (tickets:admin).
func (a *api) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if _, err := queryParams(r); err != nil {
		fail(w, r, err, "")
		return
	}
	subs, err := a.hooks.ListSubscriptions(r.Context(), principal(r).Tenant)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := WebhookList{Webhooks: make([]Webhook, len(subs))}
	for i, s := range subs {
		out.Webhooks[i] = toWebhook(s, "")
	}
	writeJSON(w, http.StatusOK, out)
}

// getWebhook is GET /api/v1/webhooks/{webhook_id} (tickets:admin).
func (a *api) getWebhook(w http.ResponseWriter, r *http.Request) {
	id, err := webhookID(r, "webhook_id")
	if err == nil {
		var sub webhooks.Subscription
		if sub, err = a.hooks.GetSubscription(r.Context(), principal(r).Tenant, id); err == nil {
			writeJSON(w, http.StatusOK, toWebhook(sub, ""))
			return
		}
	}
	fail(w, r, err, "")
}

// deleteWebhook is DELETE /api/v1/webhooks/{webhook_id} (tickets:admin):
// nothing more is delivered to it.
func (a *api) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	id, err := webhookID(r, "webhook_id")
	if err == nil {
		if err = a.hooks.DeleteSubscription(r.Context(), principal(r).Tenant, id); err == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	fail(w, r, err, "")
}

// listWebhookDeliveries is GET /api/v1/webhooks/{webhook_id}/deliveries
// (tickets:admin), newest first, with every attempt.
func (a *api) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "limit")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	limit, err := pageLimit(q)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	id, err := webhookID(r, "webhook_id")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	ds, err := a.hooks.Deliveries(r.Context(), principal(r).Tenant, id, limit)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := WebhookDeliveryList{Deliveries: make([]WebhookDelivery, len(ds))}
	for i, d := range ds {
		out.Deliveries[i] = toDelivery(d)
	}
	writeJSON(w, http.StatusOK, out)
}

// retryWebhookDelivery is POST
// /api/v1/webhooks/{webhook_id}/deliveries/{delivery_id}/retry
// (tickets:admin): a finished delivery is sent again with the same
// webhook-id, so a receiver that deduplicates acts at most once.
func (a *api) retryWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	sub, err := webhookID(r, "webhook_id")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	del, err := webhookID(r, "delivery_id")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	d, err := a.hooks.Retry(r.Context(), principal(r).Tenant, sub, del)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusAccepted, toDelivery(d))
}
