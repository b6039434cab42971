package mcptools

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/changelog"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// ToolBulkUpdateTickets is bulk_update_tickets' contract name.
const ToolBulkUpdateTickets = "bulk_update_tickets"

const descBulkUpdateTickets = `One change to 1-100 tickets (ids, each once) as one operation: all change or none.

Retry contract: a fresh random UUID (v4 or v7) as operation_id per intended change; on any doubt retry with the SAME operation_id and arguments, never a new one to make it pass. A retry never applies it twice: it answers replayed: true with each ticket's original version and changes. Answers per ticket only key, version and changes: get_ticket shows a whole ticket.

if_versions ({"SUP-42": version you read}): if any changed since, nothing is written (version_conflict). Changing 10 or more tickets, or making any urgent, needs a person's approval: your client may ask; else give the user approval_required's approval_url, then retry unchanged.`

// BulkUpdateTicketsIn is the input of bulk_update_tickets.
type BulkUpdateTicketsIn struct {
	OperationID string `json:"operation_id"`
	contract.BulkUpdateFields
}

// BulkUpdateTicketsOut is bulk_update_tickets' success result.
type BulkUpdateTicketsOut struct {
	OperationID string              `json:"operation_id"`
	Status      string              `json:"status"`
	Replayed    bool                `json:"replayed"`
	Tickets     []contract.BulkItem `json:"tickets"`
	// summary is the text block: one line, where the JSON of 100 tickets
	// would repeat the structured content to a model that reads text.
	summary string
}

// text is the answer's one text block (success).
func (o BulkUpdateTicketsOut) text() string { return o.summary }

// bulkSummary is a bulk update's outcome in one line: "Updated 12 of 12
// tickets (operation …): status open → closed (12). …"
func bulkSummary(r tickets.BulkResult) string {
	perTicket := make([]tickets.Changes, 0, len(r.Items))
	changed := 0
	for _, it := range r.Items {
		perTicket = append(perTicket, it.Changes)
		if len(it.Changes) > 0 {
			changed++
		}
	}
	verb := "Updated"
	if r.Replayed {
		verb = "Replayed: this operation already updated"
	}
	line := fmt.Sprintf("%s %d of %d tickets (operation %s)", verb, changed, len(r.Items), r.OperationID)
	if what := changelog.Describe(perTicket); what != "" {
		line += ": " + what
	}
	return line + ". Per ticket key, version and changes are in the structured result; get_ticket shows a whole ticket."
}

func (in BulkUpdateTicketsIn) operationID() string { return in.OperationID }

var bulkUpdateTickets = newTool(spec[BulkUpdateTicketsIn, BulkUpdateTicketsOut]{
	name: ToolBulkUpdateTickets, title: "Bulk update tickets", description: descBulkUpdateTickets, scope: authn.ScopeWrite,
	destructive: true, versionConflicts: true, approvals: true,
	input: func(s *jsonschema.Schema) {
		s.Properties["operation_id"].Pattern = operationIDPattern
		contract.ConstrainBulkUpdateFields(s)
	},
	output: func(s *jsonschema.Schema) {
		s.Properties["status"] = succeeded()
		item := s.Properties["tickets"].Items
		item.Properties["changes"].AdditionalProperties = ref(defChange)
	},
	handle: func(ctx context.Context, svc *tickets.Service, c call, in BulkUpdateTicketsIn) (BulkUpdateTicketsOut, error) {
		res, err := svc.BulkUpdateTickets(ctx, c.caller(), c.operationID, in.Bulk())
		if err != nil {
			return BulkUpdateTicketsOut{}, err
		}
		return BulkUpdateTicketsOut{
			OperationID: res.OperationID.String(), Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
			Tickets: contract.FromBulkItems(res.Items), summary: bulkSummary(res),
		}, nil
	},
})
