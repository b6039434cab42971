package wire

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/tickets"
)

// BulkUpdateFields is the one input contract of a bulk update: what
// bulk_update_tickets takes besides operation_id, and the body of POST
// /api/v1/tickets/bulk. The change is update_ticket's, without title and
// description, which no two tickets share.
type BulkUpdateFields struct {
	IDs          []string         `json:"ids" jsonschema:"The tickets to change: 1-100 ticket IDs (UUIDs) or keys like SUP-42, each ticket once."`
	IfVersions   map[string]int64 `json:"if_versions,omitempty" jsonschema:"Optional: for tickets you read before deciding, the version you read, keyed by the ticket as written in ids. If any such ticket changed since, nothing at all is written (version_conflict)."`
	Priority     *string          `json:"priority,omitempty" jsonschema:"New priority: low, normal, high or urgent."`
	Status       *string          `json:"status,omitempty" jsonschema:"New status; every ticket must be allowed the move (open to in_progress, resolved or closed; in_progress to open, resolved or closed; resolved to open or closed; closed to open only)."`
	Assignee     *string          `json:"assignee,omitempty" jsonschema:"Who the tickets are assigned to (a subject, at most 200 characters); \"me\" assigns them to you; an empty string unassigns them."`
	AddLabels    []string         `json:"add_labels,omitempty" jsonschema:"Labels to add, normalised like create's (trimmed, lower-cased)."`
	RemoveLabels []string         `json:"remove_labels,omitempty" jsonschema:"Labels to remove; removing a label a ticket lacks is not an error."`
}

// Bulk is the one mapping from the wire fields to the domain's bulk update.
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
	p["priority"].Enum = StringEnum(tickets.Priorities...)
	p["status"].Enum = StringEnum(tickets.Statuses...)
	p["assignee"].MaxLength = jsonschema.Ptr(tickets.MaxAssignee)
	for _, name := range []string{"add_labels", "remove_labels"} {
		l := p[name]
		l.MaxItems = jsonschema.Ptr(tickets.MaxLabels)
		l.Items.MinLength, l.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxLabel)
	}
}

// maxTicketRef bounds a ticket reference: a UUID is the longest.
const maxTicketRef = 64

// BulkItem is one ticket's part of a bulk update's answer.
type BulkItem struct {
	TicketID string            `json:"ticket_id"`
	Key      string            `json:"key"`
	Version  int64             `json:"version" jsonschema:"The version this operation produced for the ticket (on a replay, the original's; the ticket may be later now)."`
	Changes  map[string]Change `json:"changes" jsonschema:"What this operation changed on the ticket; {} when it already was as asked."`
	Ticket   Ticket            `json:"ticket" jsonschema:"The ticket as it is now."`
}

// FromBulkItems converts a bulk update's items, in the order named.
func FromBulkItems(items []tickets.BulkItem) []BulkItem {
	out := make([]BulkItem, len(items))
	for i, it := range items {
		out[i] = BulkItem{TicketID: it.Ticket.ID.String(), Key: it.Ticket.Key, Version: it.Version,
			Changes: FromChanges(it.Changes), Ticket: FromTicket(it.Ticket)}
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
	s := Infer[BulkResult]()
	ConstrainTicket(s.Properties["tickets"].Items.Properties["ticket"])
	return s
}
