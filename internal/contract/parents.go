package contract

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/subtasks"
)

// ParentRef is update's parent: absent (Set false) leaves it, null or ""
// detaches, a ticket (UUID or key) attaches. It is its own type because a
// pointer cannot tell null from absent.
type ParentRef struct {
	Set bool
	Ref string
}

// UnmarshalJSON records that parent was given, null included.
func (p *ParentRef) UnmarshalJSON(b []byte) error {
	p.Set = true
	if string(b) == "null" {
		return nil
	}
	return json.Unmarshal(b, &p.Ref)
}

// MarshalJSON writes the reference, null for a detach.
func (p ParentRef) MarshalJSON() ([]byte, error) {
	if p.Ref == "" {
		return []byte("null"), nil
	}
	return json.Marshal(p.Ref)
}

// update is the domain's parent change: nil leaves it.
func (p ParentRef) update() *string {
	if !p.Set {
		return nil
	}
	return &p.Ref
}

// parentSchema is a parent reference or null.
func parentSchema(description string) *jsonschema.Schema {
	return Nullable(&jsonschema.Schema{Type: "string", MaxLength: jsonschema.Ptr(64), Description: description})
}

// TicketRef names a ticket.
type TicketRef struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

// Children is a ticket's sub-tasks as get_ticket shows them.
type Children struct {
	Count int64    `json:"count"`
	Keys  []string `json:"keys" jsonschema:"the first 20"`
}

// FromFamily converts a ticket's parent (nil: none) and children.
func FromFamily(parent *subtasks.Ref, children subtasks.Children) (*TicketRef, Children) {
	var p *TicketRef
	if parent != nil {
		p = &TicketRef{ID: parent.ID, Key: parent.Key}
	}
	keys := children.Keys
	if keys == nil {
		keys = []string{}
	}
	return p, Children{Count: children.Count, Keys: keys}
}

// TicketWithFamily is the ticket object with the parent and children
// get_ticket shows beside it: REST's GET /tickets/{id_or_key}, a superset of
// the ticket object, so a client reading tickets reads it unchanged.
type TicketWithFamily struct {
	Ticket
	Parent   *TicketRef `json:"parent" jsonschema:"the ticket this is a sub-task of, or null"`
	Children Children   `json:"children" jsonschema:"the ticket's sub-tasks: how many, and the first keys by creation"`
}

// TicketWithFamilySchema is TicketWithFamily's JSON Schema.
func TicketWithFamilySchema() *jsonschema.Schema {
	s := Infer[TicketWithFamily]()
	ConstrainTicket(s)
	s.Properties["parent"] = Nullable(s.Properties["parent"])
	return s
}
