package contract

import (
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/tickets"
)

// TicketUpdateFields is the one input contract of a ticket update: the
// fields update_ticket takes besides operation_id, id and if_version, and the
// body of PATCH /api/v1/tickets/{id_or_key}. Absent fields stay as they are.
type TicketUpdateFields struct {
	Title        *string   `json:"title,omitempty"`
	Description  *string   `json:"description,omitempty"`
	Priority     *string   `json:"priority,omitempty"`
	Status       *string   `json:"status,omitempty"`
	Assignee     *string   `json:"assignee,omitempty" jsonschema:"A subject; \"me\" is you; \"\" unassigns."`
	AddLabels    []string  `json:"add_labels,omitempty"`
	RemoveLabels []string  `json:"remove_labels,omitempty"`
	Parent       ParentRef `json:"parent,omitzero"`
}

// Update is the one mapping from the contract's fields to the domain's update.
func (f TicketUpdateFields) Update(ifVersion *int64) tickets.TicketUpdate {
	u := tickets.TicketUpdate{
		IfVersion: ifVersion, Title: f.Title, Description: f.Description, Assignee: f.Assignee,
		AddLabels: f.AddLabels, RemoveLabels: f.RemoveLabels, Parent: f.Parent.update(),
	}
	if f.Priority != nil {
		p := tickets.Priority(*f.Priority)
		u.Priority = &p
	}
	if f.Status != nil {
		st := tickets.Status(*f.Status)
		u.Status = &st
	}
	return u
}

// TicketUpdateFieldsSchema is TicketUpdateFields' JSON Schema with the
// tickets package's limits.
func TicketUpdateFieldsSchema() *jsonschema.Schema {
	s := Infer[TicketUpdateFields]()
	ConstrainTicketUpdateFields(s)
	// As a body of its own it must name something to change; the service
	// also refuses fields that all normalise to nothing.
	s.MinProperties = jsonschema.Ptr(1)
	return s
}

// ConstrainTicketUpdateFields adds the tickets package's limits and
// vocabularies to a schema whose properties include TicketUpdateFields'.
func ConstrainTicketUpdateFields(s *jsonschema.Schema) {
	p := s.Properties
	p["title"].MinLength, p["title"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxTitle)
	p["description"].MaxLength = jsonschema.Ptr(tickets.MaxDescription)
	p["parent"] = parentSchema("a ticket: makes this its sub-task; null detaches")
	constrainChange(p)
}

// constrainChange adds the limits and vocabularies of the change a single
// and a bulk update share: priority, status, assignee and the label lists.
func constrainChange(p map[string]*jsonschema.Schema) {
	p["priority"].Enum = StringEnum(tickets.Priorities...)
	p["status"].Enum = StringEnum(tickets.Statuses...)
	p["assignee"].MaxLength = jsonschema.Ptr(tickets.MaxAssignee)
	for _, name := range []string{"add_labels", "remove_labels"} {
		l := p[name]
		l.MaxItems = jsonschema.Ptr(tickets.MaxLabels)
		l.Items.MinLength, l.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxLabel)
	}
}

// CommentFields is the one input contract of add_comment besides
// operation_id and id, and the body of POST /api/v1/tickets/{id}/comments.
type CommentFields struct {
	Body string `json:"body"`
}

// CommentFieldsSchema is CommentFields' JSON Schema with its limits.
func CommentFieldsSchema() *jsonschema.Schema {
	s := Infer[CommentFields]()
	ConstrainCommentFields(s)
	return s
}

// ConstrainCommentFields adds the comment body's limits.
func ConstrainCommentFields(s *jsonschema.Schema) {
	s.Properties["body"].MinLength, s.Properties["body"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxCommentBody)
}

// Comment is the comment object of the public contract.
type Comment struct {
	ID        string    `json:"id" jsonschema:"durable comment ID (UUID)"`
	TicketID  string    `json:"ticket_id"`
	Author    string    `json:"author" jsonschema:"subject of the token that added the comment"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
}

// FromComment converts a domain comment.
func FromComment(c tickets.Comment) Comment {
	return Comment{ID: c.ID.String(), TicketID: c.TicketID.String(), Author: c.Author, Body: c.Body, CreatedAt: c.CreatedAt}
}

// CommentSchema is the comment object's JSON Schema.
func CommentSchema() *jsonschema.Schema {
	s := Infer[Comment]()
	ConstrainComment(s)
	return s
}

// ConstrainComment marks the comment's timestamp as RFC 3339.
func ConstrainComment(s *jsonschema.Schema) { s.Properties["created_at"].Format = "date-time" }

// Change is one field's move in an update: strings, null (an unassigned
// assignee) or arrays (labels).
type Change struct {
	From any `json:"from"`
	To   any `json:"to"`
}

// FromChanges converts a domain update's changes; never nil, so an update
// that changed nothing shows {}.
func FromChanges(c tickets.Changes) map[string]Change {
	out := make(map[string]Change, len(c))
	for field, ch := range c {
		out[field] = Change{From: ch.From, To: ch.To}
	}
	return out
}

// Event is one entry of a ticket's history.
type Event struct {
	ID          string            `json:"id"`
	TicketID    string            `json:"ticket_id"`
	Version     int64             `json:"version" jsonschema:"the ticket's version after this write"`
	Kind        string            `json:"kind" jsonschema:"created, updated, commented, linked or unlinked"`
	Actor       string            `json:"actor" jsonschema:"subject of the token that made the write"`
	OperationID string            `json:"operation_id" jsonschema:"the operation ID (Idempotency-Key) of the write"`
	CommentID   string            `json:"comment_id,omitempty" jsonschema:"commented: the comment added"`
	Changes     map[string]Change `json:"changes" jsonschema:"updated: each changed field with from and to; linked, unlinked: the link; empty otherwise"`
	CreatedAt   time.Time         `json:"created_at"`
	Approval    *Approval         `json:"approval,omitempty" jsonschema:"who approved this write, how and when, when it needed a person's yes"`
}

// FromEvent converts a domain event.
func FromEvent(e tickets.Event) Event {
	out := Event{
		ID: e.ID.String(), TicketID: e.TicketID.String(), Version: e.Version, Kind: string(e.Kind), Actor: e.Actor,
		OperationID: e.OperationID.String(), Changes: FromChanges(e.Changes), CreatedAt: e.CreatedAt,
	}
	if e.CommentID != nil {
		out.CommentID = e.CommentID.String()
	}
	if e.Approval != nil {
		out.Approval = FromApproval(*e.Approval)
	}
	return out
}

// EventSchema is the event object's JSON Schema.
func EventSchema() *jsonschema.Schema {
	s := Infer[Event]()
	ConstrainEvent(s)
	return s
}

// ConstrainEvent states the event's kinds and marks its timestamp as RFC 3339.
func ConstrainEvent(s *jsonschema.Schema) {
	s.Properties["kind"].Enum = StringEnum(tickets.EventCreated, tickets.EventUpdated, tickets.EventCommented, tickets.EventLinked, tickets.EventUnlinked)
	s.Properties["created_at"].Format = "date-time"
}
