package mcptools

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// ToolLinkTickets is link_tickets' contract name.
const ToolLinkTickets = "link_tickets"

const descLinkTickets = `Link ticket id to target (any project): id blocks, blocked_by, relates_to, duplicates or duplicated_by target; remove: true unlinks. Both ends show it, the target with the inverse.

Retry contract: as update_ticket's (same operation_id and arguments; replayed: true).`

// LinkTicketsIn is the input of link_tickets.
type LinkTicketsIn struct {
	OperationID string `json:"operation_id"`
	ID          string `json:"id"`
	Link        string `json:"link"`
	Target      string `json:"target"`
	Remove      bool   `json:"remove,omitempty"`
}

// LinkTicketsOut is link_tickets' success result.
type LinkTicketsOut struct {
	OperationID string          `json:"operation_id"`
	Status      string          `json:"status"`
	Replayed    bool            `json:"replayed"`
	Changed     bool            `json:"changed" jsonschema:"False when the link already was as asked."`
	TicketID    string          `json:"ticket_id"`
	Links       []contract.Link `json:"links" jsonschema:"The ticket's links now."`
}

func (in LinkTicketsIn) operationID() string { return in.OperationID }

var linkTickets = newTool(spec[LinkTicketsIn, LinkTicketsOut]{
	name: ToolLinkTickets, title: "Link tickets", description: descLinkTickets, scope: authn.ScopeWrite, destructive: true,
	input: func(s *jsonschema.Schema) {
		p := s.Properties
		p["operation_id"].Pattern = operationIDPattern
		p["id"].MinLength, p["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		p["target"].MinLength, p["target"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		p["link"].Enum = stringEnum(links.Kinds...)
	},
	output: func(s *jsonschema.Schema) {
		s.Properties["status"] = succeeded()
		s.Properties["links"].Items.Properties["link"].Enum = stringEnum(links.Kinds...)
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in LinkTicketsIn) (LinkTicketsOut, error) {
		res, err := svc.LinkTickets(ctx, c.caller(), c.operationID, tickets.LinkChange{
			Ticket: in.ID, Kind: links.Kind(in.Link), Target: in.Target, Remove: in.Remove,
		})
		if err != nil {
			return LinkTicketsOut{}, err
		}
		return LinkTicketsOut{
			OperationID: res.OperationID.String(), Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
			Changed: res.Changed, TicketID: res.Ticket.ID.String(), Links: contract.FromLinks(res.Links),
		}, nil
	},
})
