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

const descBulkUpdateTickets = `Apply one change (status, priority, assignee, labels) to 1-100 of your tenant's tickets as one operation: all of them change or none does.

Retry contract: a fresh random UUID (v4 or v7) as operation_id for this one intended change, the SAME operation_id and arguments on every retry. A retry never applies the change twice: it answers replayed: true with each ticket's original version and changes. if_versions ({"SUP-42": version you read}) pins tickets: if any changed since, nothing is written (version_conflict). Success: tickets, one per id in order, each with version, changes and the ticket now. Errors are isError results with error.code, retryable and a next step. 10 or more tickets, or making tickets urgent, needs a person's approval: your client may ask them; else approval_required gives an approval_url for the user, then retry unchanged.`

// BulkUpdateTicketsIn is the input of bulk_update_tickets.
type BulkUpdateTicketsIn struct {
	OperationID string `json:"operation_id" jsonschema:"Fresh random UUID (v4 or v7) for this one intended change; the same on every retry of it."`
	wire.BulkUpdateFields
}

// BulkUpdateTicketsOut is bulk_update_tickets' success result.
type BulkUpdateTicketsOut struct {
	OperationID string          `json:"operation_id"`
	Status      string          `json:"status"`
	Replayed    bool            `json:"replayed"`
	Tickets     []wire.BulkItem `json:"tickets"`
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
		item := s.Properties["tickets"].Items
		item.Properties["changes"].AdditionalProperties = ref(defChange)
		item.Properties["ticket"] = ref(defTicket)
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
