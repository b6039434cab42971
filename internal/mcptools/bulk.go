package mcptools

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/wire"
)

// ToolBulkUpdateTickets is bulk_update_tickets' contract name.
const ToolBulkUpdateTickets = "bulk_update_tickets"

const descBulkUpdateTickets = `Apply one change (status, priority, assignee, labels) to several of your tenant's tickets at once, as one operation: every ticket changes or none does. Safe to retry: one operation_id applies the change at most once, ever.

operation_id: generate a fresh random UUID (version 4 or 7) for this one intended change, and reuse exactly the same operation_id and arguments on every retry of it. A retry answers replayed: true with each ticket's version and changes from the original call and never applies the change again.

ids: 1-100 tickets (UUIDs or keys like SUP-42), each once. if_versions: for tickets you read before deciding, {"SUP-42": version you read}; if any of them changed since, nothing at all is written.

Approval: changing 10 or more tickets at once (the default threshold) or making tickets urgent needs a person's yes. Your client may show the person a form or a page; otherwise the error approval_required carries approval_url: ask the user to open it and approve, then retry with the same operation_id and arguments.

On success: status "succeeded", and tickets: one entry per ticket, in the order of ids, with version (the version this change produced), changes and ticket (as it is now).
Errors (isError: true, error.code, and a sentence saying what to do next):
- version_conflict: a ticket is no longer at its if_versions entry; nothing was written. The result carries that ticket and its current_version: decide again and call again (the same operation_id is fine).
- invalid_input: nothing was attempted; fix what the message names (a disallowed status move names the ticket and the allowed moves) and call again.
- not_found: your tenant has no such ticket (the message names it).
- approval_required: a person must approve first; nothing was written. Ask the user to open approval_url, then retry with the same operation_id and arguments.
- approval_declined: the person said no; nothing was written. Do not retry this change unless the user asks for it again.
- idempotency_conflict, operation_in_progress, outcome_unknown, unavailable, internal, forbidden: as for update_ticket.`

// BulkUpdateTicketsIn is the input of bulk_update_tickets.
type BulkUpdateTicketsIn struct {
	OperationID string `json:"operation_id" jsonschema:"A fresh random UUID (version 4 or 7) that you generate once for this intended change and reuse unchanged on every retry of it."`
	wire.BulkUpdateFields
}

// BulkUpdateTicketsOut is bulk_update_tickets' success result.
type BulkUpdateTicketsOut struct {
	OperationID string          `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string          `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool            `json:"replayed" jsonschema:"True when an earlier call with this operation_id made the change and this call only reported it."`
	Tickets     []wire.BulkItem `json:"tickets" jsonschema:"One entry per ticket, in the order of ids."`
}

func (in BulkUpdateTicketsIn) operationID() string { return in.OperationID }

var bulkUpdateTickets = newTool(spec[BulkUpdateTicketsIn, BulkUpdateTicketsOut]{
	name: ToolBulkUpdateTickets, title: "Bulk update tickets", description: descBulkUpdateTickets, scope: authn.ScopeWrite,
	destructive: true,
	input: func(s *jsonschema.Schema) {
		s.Properties["operation_id"].Pattern = operationIDPattern
		wire.ConstrainBulkUpdateFields(s)
	},
	output: func(s *jsonschema.Schema) {
		s.Properties["status"].Enum = []any{"succeeded"}
		ticketObject(s.Properties["tickets"].Items.Properties["ticket"])
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in BulkUpdateTicketsIn) (BulkUpdateTicketsOut, error) {
		res, err := svc.BulkUpdateTickets(ctx, c.principal.Tenant, c.principal.Subject, in.OperationID, in.Bulk())
		if err != nil {
			return BulkUpdateTicketsOut{}, err
		}
		return BulkUpdateTicketsOut{
			OperationID: c.operationID, Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
			Tickets: wire.FromBulkItems(res.Items),
		}, nil
	},
})
