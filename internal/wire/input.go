package wire

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TicketFields is the one input contract of a ticket write: the fields that
// create_ticket and preview_ticket take as arguments and POST
// /api/v1/tickets takes as its body. Adding a field here adds it to the MCP
// schemas, the REST body and the OpenAPI document.
type TicketFields struct {
	ProjectID   string   `json:"project_id" jsonschema:"The project to file the ticket in, e.g. support (see list_projects)."`
	Title       string   `json:"title" jsonschema:"One-line summary, 1-200 characters after trimming."`
	Description string   `json:"description,omitempty" jsonschema:"Details: what happened, what was expected, how to reproduce; at most 20000 characters."`
	Priority    string   `json:"priority,omitempty" jsonschema:"How urgent the ticket is: low, normal (the default), high or urgent."`
	Labels      []string `json:"labels,omitempty" jsonschema:"Up to 20 labels of 1-50 characters each; they are trimmed, lower-cased, de-duplicated and sorted."`
}

// NewTicket is the one mapping from the wire fields to the domain's input.
func (f TicketFields) NewTicket() tickets.NewTicket {
	return tickets.NewTicket{
		ProjectID: f.ProjectID, Title: f.Title, Description: f.Description,
		Priority: tickets.Priority(f.Priority), Labels: f.Labels,
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
// its timestamps as RFC 3339, on a schema inferred from Ticket.
func ConstrainTicket(s *jsonschema.Schema) {
	s.Properties["priority"].Enum = StringEnum(tickets.Priorities...)
	s.Properties["status"].Enum = StringEnum(tickets.Statuses...)
	s.Properties["created_at"].Format = "date-time"
	s.Properties["updated_at"].Format = "date-time"
	// Infer drops null, but an unassigned ticket's assignee is null.
	s.Properties["assignee"].Type, s.Properties["assignee"].Types = "", []string{"string", "null"}
	s.Properties["version"].Minimum = jsonschema.Ptr(1.0)
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
// (MCP adds not_found, which REST answers with a 404 instead).
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
	s.Properties["downstream"].Properties["next_check_at"].Format = "date-time"
}

// DownstreamStatuses are the statuses of an operation's effect in a tracker.
var DownstreamStatuses = []string{tickets.DownstreamPending, tickets.DownstreamSucceeded, tickets.DownstreamUnknown, tickets.DownstreamFailed}

// DeliveryStatuses are the statuses a webhook delivery can have.
var DeliveryStatuses = []string{"pending", "delivered", "failed"}

// LedgerStatuses are the statuses an operation record can have.
var LedgerStatuses = []string{
	string(operations.StatusSucceeded), string(operations.StatusFailed),
	string(operations.StatusPending), string(operations.StatusUnknown),
}
