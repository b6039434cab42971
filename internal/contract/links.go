package contract

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/links"
)

// Link is one of a ticket's links as get_ticket shows it: how this ticket
// relates to the other one (the other end reads the inverse kind).
type Link struct {
	Link string `json:"link" jsonschema:"blocks, blocked_by, relates_to, duplicates or duplicated_by"`
	ID   string `json:"id" jsonschema:"the other ticket's ID"`
	Key  string `json:"key" jsonschema:"the other ticket's key"`
}

// FromLinks converts a ticket's links; never nil.
func FromLinks(all []links.Link) []Link {
	out := make([]Link, len(all))
	for i, l := range all {
		out[i] = Link{Link: string(l.Kind), ID: l.TicketID.String(), Key: l.Key}
	}
	return out
}

// LinkFields is the body of a link change (REST; link_tickets adds the
// ticket and the operation ID).
type LinkFields struct {
	Link   string `json:"link" jsonschema:"blocks, blocked_by, relates_to, duplicates or duplicated_by"`
	Target string `json:"target" jsonschema:"the other ticket: UUID or key"`
	Remove bool   `json:"remove,omitempty" jsonschema:"true removes the link"`
}

// LinkFieldsSchema is LinkFields' JSON Schema.
func LinkFieldsSchema() *jsonschema.Schema {
	s := Infer[LinkFields]()
	s.Properties["link"].Enum = StringEnum(links.Kinds...)
	return s
}

// LinkList is a ticket's links.
type LinkList struct {
	Links []Link `json:"links"`
}

// LinkListSchema is LinkList's JSON Schema.
func LinkListSchema() *jsonschema.Schema {
	s := Infer[LinkList]()
	s.Properties["links"].Items.Properties["link"].Enum = StringEnum(links.Kinds...)
	return s
}
