package contract

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/tickets"
)

// BulkUpdateFields is the one input contract of a bulk update: what
// bulk_update_tickets takes besides operation_id, and the body of POST
// /api/v1/tickets/bulk. The change is update_ticket's, without title and
// description, which no two tickets share.
type BulkUpdateFields struct {
	IDs          []string         `json:"ids"`
	IfVersions   map[string]int64 `json:"if_versions,omitempty"`
	Priority     *string          `json:"priority,omitempty"`
	Status       *string          `json:"status,omitempty"`
	Assignee     *string          `json:"assignee,omitempty" jsonschema:"A subject; \"me\" is you; \"\" unassigns."`
	AddLabels    []string         `json:"add_labels,omitempty"`
	RemoveLabels []string         `json:"remove_labels,omitempty"`
}

// Bulk is the one mapping from the contract's fields to the domain's bulk update.
func (f BulkUpdateFields) Bulk() tickets.BulkUpdate {
	u := TicketUpdateFields{Priority: f.Priority, Status: f.Status, Assignee: f.Assignee,
		AddLabels: f.AddLabels, RemoveLabels: f.RemoveLabels}.Update(nil)
	return tickets.BulkUpdate{Refs: f.IDs, IfVersions: f.IfVersions, Update: u}
}

// BulkUpdateFieldsSchema is BulkUpdateFields' JSON Schema with the tickets
// package's limits.
func BulkUpdateFieldsSchema() *jsonschema.Schema {
	s := Infer[BulkUpdateFields]()
	ConstrainBulkUpdateFields(s)
	return s
}

// ConstrainBulkUpdateFields adds the limits and vocabularies to a schema
// whose properties include BulkUpdateFields'.
func ConstrainBulkUpdateFields(s *jsonschema.Schema) {
	p := s.Properties
	ids := p["ids"]
	ids.MinItems, ids.MaxItems = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxBulk)
	ids.Items.MinLength, ids.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
	p["if_versions"].AdditionalProperties.Minimum = jsonschema.Ptr(1.0)
	constrainChange(p)
}

// maxTicketRef bounds a ticket reference: a UUID is the longest.
const maxTicketRef = 64

// BulkItem is one ticket's part of a bulk update's answer: its key, the
// version this operation produced and what changed, and nothing more, so
// 100 tickets' answer stays a few KiB (docs/contract.md#bulk-answers);
// get_ticket (GET /api/v1/tickets/{key}) shows a whole ticket.
type BulkItem struct {
	Key     string            `json:"key"`
	Version int64             `json:"version" jsonschema:"The version this operation produced."`
	Changes map[string]Change `json:"changes" jsonschema:"What this operation changed on the ticket, field by field (from, to); {} when it was already so."`
}

// FromBulkItems converts a bulk update's items, in the order named.
func FromBulkItems(items []tickets.BulkItem) []BulkItem {
	out := make([]BulkItem, len(items))
	for i, it := range items {
		out[i] = BulkItem{Key: it.Ticket.Key, Version: it.Version, Changes: FromChanges(it.Changes)}
	}
	return out
}

// BulkResult is POST /api/v1/tickets/bulk's answer.
type BulkResult struct {
	OperationID string     `json:"operation_id"`
	Tickets     []BulkItem `json:"tickets" jsonschema:"One entry per ticket, in the order of ids."`
}

// BulkResultSchema is BulkResult's JSON Schema.
func BulkResultSchema() *jsonschema.Schema {
	return Infer[BulkResult]()
}
