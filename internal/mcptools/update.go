package mcptools

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// ToolUpdateTicket is update_ticket's contract name.
const ToolUpdateTicket = "update_ticket"

const descUpdateTicket = `Change at least one field of a ticket; the rest stay.

Retry contract: a fresh random UUID (v4 or v7) as operation_id per intended change; on any doubt (timeout, lost connection, retryable error) retry with the SAME operation_id and arguments, never a new one. A retry never applies it twice: it answers replayed: true with the original version and changes (30 days).

if_version: the version you read; if the ticket changed since, version_conflict carries it now: decide again. Urgent needs a person's approval: your client may ask; else give the user approval_required's approval_url, then retry unchanged.`

// UpdateTicketIn is the input of update_ticket.
type UpdateTicketIn struct {
	OperationID string `json:"operation_id"`
	ID          string `json:"id"`
	IfVersion   *int64 `json:"if_version,omitempty"`
	contract.TicketUpdateFields
}

// UpdateTicketOut is update_ticket's success result.
type UpdateTicketOut struct {
	OperationID string                     `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string                     `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool                       `json:"replayed" jsonschema:"True when an earlier call with this operation_id made the change and this call only reported it."`
	TicketID    string                     `json:"ticket_id"`
	Version     int64                      `json:"version" jsonschema:"The version this operation produced (on a replay, the original's; the ticket may be later now)."`
	Changes     map[string]contract.Change `json:"changes" jsonschema:"What this operation changed, field by field; {} when nothing needed changing."`
	Ticket      contract.Ticket            `json:"ticket" jsonschema:"The ticket as it is now."`
}

func (in UpdateTicketIn) operationID() string { return in.OperationID }

var updateTicket = newTool(spec[UpdateTicketIn, UpdateTicketOut]{
	name: ToolUpdateTicket, title: "Update ticket", description: descUpdateTicket, scope: authn.ScopeWrite, destructive: true, versionConflicts: true, approvals: true,
	input: func(s *jsonschema.Schema) {
		p := s.Properties
		p["operation_id"].Pattern = operationIDPattern
		p["id"].MinLength, p["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		p["if_version"].Minimum = jsonschema.Ptr(1.0)
		contract.ConstrainTicketUpdateFields(s)
	},
	output: func(s *jsonschema.Schema) {
		s.Properties["status"] = succeeded()
		s.Properties["changes"].AdditionalProperties = ref(defChange)
		s.Properties["ticket"] = ref(defTicket)
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in UpdateTicketIn) (UpdateTicketOut, error) {
		res, err := svc.UpdateTicket(ctx, c.caller(), c.operationID, in.ID, in.Update(in.IfVersion))
		if err != nil {
			return UpdateTicketOut{}, err
		}
		return UpdateTicketOut{
			OperationID: res.OperationID.String(), Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
			TicketID: res.Ticket.ID.String(), Version: res.Version, Changes: contract.FromChanges(res.Changes),
			Ticket: contract.FromTicket(res.Ticket),
		}, nil
	},
})
