package contract

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TicketFields is the one input contract of a ticket write: the fields that
// create_ticket and preview_ticket take as arguments and POST
// /api/v1/tickets takes as its body. Adding a field here adds it to the MCP
// schemas, the REST body and the OpenAPI document.
type TicketFields struct {
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Priority    string   `json:"priority,omitempty"`
	Labels      []string `json:"labels,omitempty"`
	Parent      string   `json:"parent,omitempty" jsonschema:"a ticket: makes this its sub-task"`
}

// NewTicket is the one mapping from the contract's fields to the domain's input.
func (f TicketFields) NewTicket() tickets.NewTicket {
	return tickets.NewTicket{
		ProjectID: f.ProjectID, Title: f.Title, Description: f.Description,
		Priority: tickets.Priority(f.Priority), Labels: f.Labels, Parent: f.Parent,
	}
}

// TicketFieldsSchema is TicketFields' JSON Schema, with the limits of
// tickets.Normalize (which checks them again after trimming).
func TicketFieldsSchema() *jsonschema.Schema {
	s := Infer[TicketFields]()
	ConstrainTicketFields(s)
	return s
}

// ConstrainTicketFields adds the tickets package's limits and vocabularies to
// a schema whose properties include TicketFields' (flattened from an
// embedding struct, for instance).
func ConstrainTicketFields(s *jsonschema.Schema) {
	p := s.Properties
	p["project_id"].MinLength, p["project_id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxProjectID)
	p["title"].MinLength, p["title"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxTitle)
	p["description"].MaxLength = jsonschema.Ptr(tickets.MaxDescription)
	p["parent"].MaxLength = jsonschema.Ptr(64)
	p["priority"].Enum = StringEnum(tickets.Priorities...)
	p["priority"].Default = json.RawMessage(`"` + tickets.PriorityNormal + `"`)
	labels := p["labels"]
	labels.MaxItems = jsonschema.Ptr(tickets.MaxLabels)
	labels.Items.MinLength, labels.Items.MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(tickets.MaxLabel)
}

// TicketSchema is the ticket object's JSON Schema: Ticket with its closed
// vocabularies and RFC 3339 timestamps.
func TicketSchema() *jsonschema.Schema {
	s := Infer[Ticket]()
	ConstrainTicket(s)
	return s
}

// ConstrainTicket states the ticket object's closed vocabularies and marks
// its timestamps as RFC 3339, on a schema inferred from Ticket or
// TicketSummary.
func ConstrainTicket(s *jsonschema.Schema) {
	s.Properties["priority"].Enum = StringEnum(tickets.Priorities...)
	s.Properties["status"].Enum = StringEnum(tickets.Statuses...)
	for _, name := range []string{"created_at", "updated_at"} {
		if p := s.Properties[name]; p != nil {
			p.Format = "date-time"
		}
	}
	// Infer drops null, but an unassigned ticket's assignee is null: said as
	// two branches, which clients that map schemas onto a single-type
	// dialect accept where a type array is refused (inspector --strict).
	s.Properties["assignee"] = Nullable(s.Properties["assignee"])
	s.Properties["version"].Minimum = jsonschema.Ptr(1.0)
}

// Nullable is s or null, written as anyOf branches of one type each. The
// description stays on the whole.
func Nullable(s *jsonschema.Schema) *jsonschema.Schema {
	branch := *s
	branch.Description = ""
	return &jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{&branch, {Type: "null"}}}
}

// TicketSummarySchema is the ticket summary's JSON Schema.
func TicketSummarySchema() *jsonschema.Schema {
	s := Infer[TicketSummary]()
	ConstrainTicket(s)
	return s
}

// Infer returns the schema inferred for T with every nullable union
// replaced by its non-null type: ticketd never sends null, and some model
// providers reject type unions in tool schemas.
func Infer[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("infer schema for %T: %v", *new(T), err)) // a programming error, caught by every test
	}
	dropNull(s)
	return s
}

func dropNull(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(types) == 1 {
			s.Type, s.Types = types[0], nil
		} else {
			s.Types = types
		}
	}
	dropNull(s.Items)
	for _, p := range s.Properties {
		dropNull(p)
	}
	for _, sub := range s.AnyOf {
		dropNull(sub)
	}
}

// StringEnum lists values for a schema's enum.
func StringEnum[S ~string](values ...S) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// OperationStatusSchema is the operation status object's JSON Schema with
// its closed vocabularies; statuses lists the values the transport reports
// (OperationStatuses; MCP adds not_found, which REST answers with a 404
// instead).
func OperationStatusSchema(statuses ...string) *jsonschema.Schema {
	s := Infer[OperationStatus]()
	ConstrainOperationStatus(s, statuses...)
	return s
}

// ConstrainOperationStatus adds the status vocabulary and the ticket
// object's constraints to a schema inferred from OperationStatus.
func ConstrainOperationStatus(s *jsonschema.Schema, statuses ...string) {
	s.Properties["status"].Enum = StringEnum(statuses...)
	ConstrainTicket(s.Properties["ticket"])
	s.Properties["deliveries"].Items.Properties["status"].Enum = StringEnum(DeliveryStatuses...)
	s.Properties["downstream"].Properties["status"].Enum = StringEnum(DownstreamStatuses...)
}

// DownstreamStatuses are the statuses of an operation's effect in a tracker.
var DownstreamStatuses = []string{tickets.DownstreamPending, tickets.DownstreamSucceeded, tickets.DownstreamUnknown, tickets.DownstreamFailed}

// The statuses a webhook delivery can have. The contract declares them
// because internal/webhooks, which stores them, speaks the contract (its
// payloads carry Ticket) and so cannot be imported here; webhooks spells
// its statuses with these. The other vocabularies come from their owners
// (tickets, operations), which the contract imports.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// DeliveryStatuses are the statuses a webhook delivery can have.
var DeliveryStatuses = []string{DeliveryPending, DeliveryDelivered, DeliveryFailed}

// LedgerStatuses are the statuses an operation record can have, which a
// list of operations can filter by.
var LedgerStatuses = []string{
	string(operations.StatusSucceeded), string(operations.StatusFailed),
	string(operations.StatusPending), string(operations.StatusUnknown),
}

// OperationStatuses are the statuses a lookup of an operation ID reports:
// a record's, or expired for a write whose record was pruned (its
// tombstone, which lists never show).
var OperationStatuses = append(slices.Clone(LedgerStatuses), string(operations.StatusExpired))

// Statuses is a ticket list's status filter: one status or a list of them,
// as list_tickets takes it ("open" or ["open", "in_progress"]).
type Statuses []string

// UnmarshalJSON accepts a string or an array of strings.
func (s *Statuses) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*s = Statuses{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("status: want a status or a list of statuses: %w", err)
	}
	*s = many
	return nil
}

// Domain returns the filter as the tickets package takes it.
func (s Statuses) Domain() []tickets.Status {
	out := make([]tickets.Status, len(s))
	for i, v := range s {
		out[i] = tickets.Status(v)
	}
	return out
}

// StatusFilterSchema is the schema of a Statuses filter: a status, or a
// list of one to four distinct statuses.
func StatusFilterSchema() *jsonschema.Schema {
	one := func() *jsonschema.Schema {
		return &jsonschema.Schema{Type: "string", Enum: StringEnum(tickets.Statuses...)}
	}
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		one(),
		{Type: "array", Items: one(), MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(len(tickets.Statuses)), UniqueItems: true},
	}}
}

// ParseUpdatedSince parses a list's updated_since filter, an RFC 3339
// time; "" is no filter.
func ParseUpdatedSince(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, &tickets.ValidationError{Fields: []tickets.FieldError{{Field: "updated_since",
			Message: fmt.Sprintf("must be an RFC 3339 time such as 2026-07-28T09:00:00Z, got %q", truncateValue(s))}}}
	}
	return &t, nil
}

// truncateValue bounds a caller's value quoted in a message.
func truncateValue(s string) string {
	const maxShown = 40
	if r := []rune(s); len(r) > maxShown {
		return string(r[:maxShown]) + "…"
	}
	return s
}
