package mcptools

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/wire"
)

// ToolUpdateTicket is update_ticket's contract name.
const ToolUpdateTicket = "update_ticket"

const descUpdateTicket = `Change one of your tenant's tickets: title, description, priority, status, assignee, labels. Give at least one field to change; fields you leave out stay as they are. Safe to retry: one operation_id applies its change at most once, ever.

operation_id: generate a fresh random UUID (version 4 or 7) for this one intended change, and reuse exactly the same operation_id and arguments on every retry of it (after a timeout, a lost connection, a retryable error, or whenever you are unsure it went through). A retry answers replayed: true with the version and changes of the original call and never applies the change again, even if the ticket changed since: resolving, someone reopening, then your retry leaves the ticket open. ticketd remembers a succeeded operation_id for 30 days, so retries belong within that window. A new change gets a new operation_id.

if_version: pass the ticket's version when you read the ticket (get_ticket, list_tickets) before deciding on this change, so the change applies only if nobody changed the ticket in between. Leave it out for a change that is right whatever the ticket looks like now.

status moves: open to in_progress, resolved or closed; in_progress to open, resolved or closed; resolved to open or closed; closed to open only. assignee: a subject (to take a ticket yourself, use your own subject, the reporter of tickets you create); "" unassigns. add_labels/remove_labels are normalised like create_ticket's labels.

On success: status "succeeded", version (the version this change produced), changes ({"field": {"from", "to"}}; {} when the ticket already was as asked, and the version stays) and ticket (as it is now).
Errors (isError: true, error.code, and a sentence saying what to do next):
- version_conflict: the ticket is no longer at if_version; nothing was written. The error result carries current_version and the current ticket: read them, decide again whether the change is still right, and call again with if_version: current_version (the same operation_id is fine, nothing was recorded).
- invalid_input: nothing was attempted; fix what the message names (a disallowed status move names the allowed ones) and call again; the same operation_id is fine.
- not_found: your tenant has no such ticket.
- idempotency_conflict: this operation_id was already used for a different call; nothing was written. Generate a new operation_id only for a genuinely new change.
- operation_in_progress: a call with this operation_id is still running; wait a few seconds and retry with the same operation_id and arguments.
- outcome_unknown: the change may or may not have been applied; call get_operation_status with this operation_id, or retry with the same operation_id and arguments (never a new one).
- unavailable or internal: retry shortly with the same operation_id and arguments.
- approval_required: priority urgent pages on-call, so a person must approve it first; nothing was written. Your client may ask the person itself; otherwise ask the user to open approval_url, then retry with the same operation_id and arguments. approval_declined: the person said no; nothing was written; do not retry unless the user asks again.
- forbidden: your token lacks the tickets:write scope; retrying will not help.`

// UpdateTicketIn is the input of update_ticket.
type UpdateTicketIn struct {
	OperationID string `json:"operation_id" jsonschema:"A fresh random UUID (version 4 or 7) that you generate once for this intended change and reuse unchanged on every retry of it."`
	ID          string `json:"id" jsonschema:"The ticket's ID (UUID) or key, like SUP-42."`
	IfVersion   *int64 `json:"if_version,omitempty" jsonschema:"The ticket's version when you read it: the change applies only if the ticket is still at that version (else version_conflict). Pass it whenever you read the ticket before deciding."`
	wire.TicketUpdateFields
}

// UpdateTicketOut is update_ticket's success result.
type UpdateTicketOut struct {
	OperationID string                 `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string                 `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool                   `json:"replayed" jsonschema:"True when an earlier call with this operation_id made the change and this call only reported it."`
	TicketID    string                 `json:"ticket_id"`
	Version     int64                  `json:"version" jsonschema:"The version this operation produced (on a replay, the original's; the ticket may be later now)."`
	Changes     map[string]wire.Change `json:"changes" jsonschema:"What this operation changed, field by field; {} when nothing needed changing."`
	Ticket      wire.Ticket            `json:"ticket" jsonschema:"The ticket as it is now."`
}

func (in UpdateTicketIn) operationID() string { return in.OperationID }

var updateTicket = newTool(spec[UpdateTicketIn, UpdateTicketOut]{
	name: ToolUpdateTicket, title: "Update ticket", description: descUpdateTicket, scope: authn.ScopeWrite, destructive: true,
	input: func(s *jsonschema.Schema) {
		p := s.Properties
		p["operation_id"].Pattern = operationIDPattern
		p["id"].MinLength, p["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		p["if_version"].Minimum = jsonschema.Ptr(1.0)
		wire.ConstrainTicketUpdateFields(s)
	},
	output: func(s *jsonschema.Schema) {
		s.Properties["status"].Enum = []any{"succeeded"}
		ticketObject(s.Properties["ticket"])
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in UpdateTicketIn) (UpdateTicketOut, error) {
		res, err := svc.UpdateTicket(ctx, c.principal.Tenant, c.principal.Subject, in.OperationID, in.ID, in.Update(in.IfVersion))
		if err != nil {
			return UpdateTicketOut{}, err
		}
		return UpdateTicketOut{
			OperationID: c.operationID, Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
			TicketID: res.Ticket.ID.String(), Version: res.Version, Changes: wire.FromChanges(res.Changes),
			Ticket: wire.FromTicket(res.Ticket),
		}, nil
	},
})
