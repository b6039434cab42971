package mcptools

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Tool names. They are part of the public contract.
const (
	ToolCreateTicket       = "create_ticket"
	ToolPreviewTicket      = "preview_ticket"
	ToolGetOperationStatus = "get_operation_status"
	ToolGetTicket          = "get_ticket"
	ToolListTickets        = "list_tickets"
	ToolListProjects       = "list_projects"
)

// The tool descriptions are product copy: they are all a model knows about
// ticketd, and every client pays for them on every turn (docs/contract.md#lists-and-the-context-budget). Each
// says what the tool does and, for a write, the retry contract once, in
// plain words; what to do about an error is in the error itself (its code,
// retryable, and a next step in its text), so no description lists errors.
const (
	descCreateTicket = `Create one ticket in a project.

Retry contract: a fresh random UUID (v4 or v7) as operation_id per intended ticket; on any doubt (timeout, lost connection, retryable error) retry with the SAME operation_id and arguments, never a new one. A retry never duplicates: it answers the original with replayed: true (30 days).

Urgent needs a person's approval (it pages on-call): your client may ask; else give the user approval_required's approval_url, then retry unchanged.`

	descPreviewTicket = `Dry run of create_ticket: the normalised ticket, its fingerprint and, given an operation_id, whether create_ticket would create, replay (existing_ticket_id) or conflict (the ID made another ticket).`

	descGetOperationStatus = `Did a write happen? Ask after outcome_unknown or a timeout, before retrying. status: succeeded or expired (it ran; never repeat), pending (ask again), failed (nothing changed; see error), unknown (check again or retry unchanged), not_found (nothing ran in 30 days: safe to use it).`

	descGetTicket = `Fetch a ticket in full by ID (UUID) or key (SUP-42).`

	descListTickets = `Tickets as summaries (detail "full": whole tickets). Filters combine; query matches all words in title or description; assignee: a subject, "me" or "none". Sort defaults to updated_desc with query, else created_desc; limit to 20; a page stops at 64 KiB. Pass next_cursor as cursor with the same arguments.`

	descListProjects = `The projects: id is a project_id, key the prefix of ticket keys (SUP in SUP-42).`
)

// CreateTicketIn is the input of create_ticket. It has no tenant: the tenant
// comes from the caller's token.
type CreateTicketIn struct {
	OperationID string `json:"operation_id"`
	contract.TicketFields
}

// PreviewTicketIn is the input of preview_ticket: create_ticket's, with the
// operation ID optional.
type PreviewTicketIn struct {
	OperationID string `json:"operation_id,omitempty"`
	contract.TicketFields
}

// GetOperationStatusIn is the input of get_operation_status.
type GetOperationStatusIn struct {
	OperationID string `json:"operation_id"`
}

// GetTicketIn is the input of get_ticket.
type GetTicketIn struct {
	ID string `json:"id"`
}

// ListTicketsIn is the input of list_tickets. Every field is optional.
type ListTicketsIn struct {
	ProjectID    string            `json:"project_id,omitempty"`
	Status       contract.Statuses `json:"status,omitempty"`
	Query        string            `json:"query,omitempty"`
	Assignee     string            `json:"assignee,omitempty"`
	Label        string            `json:"label,omitempty"`
	Priority     string            `json:"priority,omitempty"`
	Parent       string            `json:"parent,omitempty" jsonschema:"a ticket: its sub-tasks"`
	UpdatedSince string            `json:"updated_since,omitempty"`
	Sort         string            `json:"sort,omitempty"`
	Detail       string            `json:"detail,omitempty"`
	Limit        int               `json:"limit,omitempty"`
	Cursor       string            `json:"cursor,omitempty"`
}

// ListProjectsIn is the (empty) input of list_projects.
type ListProjectsIn struct{}

// CreateTicketOut is create_ticket's success result.
type CreateTicketOut struct {
	OperationID string          `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string          `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool            `json:"replayed" jsonschema:"True when an earlier call with this operation_id created the ticket and this call only returned it."`
	TicketID    string          `json:"ticket_id" jsonschema:"The ticket's durable ID."`
	Ticket      contract.Ticket `json:"ticket"`
}

// PreviewTicket is the normalised ticket a preview shows.
type PreviewTicket struct {
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Labels      []string `json:"labels"`
	Parent      string   `json:"parent,omitempty" jsonschema:"The parent's key, when parent was given."`
}

// PreviewTicketOut is preview_ticket's result.
type PreviewTicketOut struct {
	Ticket           PreviewTicket `json:"ticket" jsonschema:"The ticket as create_ticket would store it."`
	Fingerprint      string        `json:"fingerprint" jsonschema:"SHA-256 of the normalised ticket: two calls are the same ticket exactly when their fingerprints match."`
	OperationID      string        `json:"operation_id,omitempty" jsonschema:"The operation_id given, lower-cased."`
	Would            string        `json:"would,omitempty" jsonschema:"With an operation_id: create, replay or conflict."`
	ExistingTicketID string        `json:"existing_ticket_id,omitempty" jsonschema:"With replay or conflict: the ticket created earlier under this operation_id."`
}

// GetTicketOut is get_ticket's result.
type GetTicketOut struct {
	Ticket contract.Ticket `json:"ticket"`
	Links  []contract.Link `json:"links" jsonschema:"Links to other tickets (link_tickets)."`
	// Parent and Children are get_ticket's alone: every other answer
	// carries tickets without them, which keeps tools/list small.
	Parent   *contract.TicketRef `json:"parent"`
	Children contract.Children   `json:"children"`
}

// ListTicketsOut is list_tickets' result. Tickets holds contract.TicketSummary
// values, or contract.Ticket values with detail "full".
type ListTicketsOut struct {
	Tickets    []any  `json:"tickets"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// ListProjectsOut is list_projects' result.
type ListProjectsOut struct {
	Projects []contract.Project `json:"projects"`
	NextStep string             `json:"next_step,omitempty" jsonschema:"Present when there are no projects: what an operator must do before tickets can be filed."`
}

// noProjectsNextStep is list_projects' next_step for a tenant without a
// project: a new tenant's agent cannot file anything until an operator
// makes one, and the agent can pass this on word for word.
const noProjectsNextStep = "Your tenant %s has no project yet, so no ticket can be filed. Ask a ticketd operator to create one, e.g. " +
	"`ticketd projects create --tenant %s --id support --key SUP --name Support` on the server, " +
	"or POST /api/v1/projects with a tickets:admin token; then call list_projects again."

// Tools lists every tool ticketd can serve, in the order tools/list shows
// them.
// Adding a tool is one value below, its entry here and its name in its
// toolset (toolsetTools).
func Tools() []Tool {
	return []Tool{
		createTicket, previewTicket, updateTicket, bulkUpdateTickets, addComment, linkTickets, getOperationStatus,
		getTicket, listTickets, listComments, listProjects, listUsers,
	}
}

// The tools. Each is one value: name, description, schemas, annotations,
// scope and handler together.
var (
	createTicket = newTool(spec[CreateTicketIn, CreateTicketOut]{
		name: ToolCreateTicket, title: "Create ticket", description: descCreateTicket, scope: authn.ScopeWrite, approvals: true,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			contract.ConstrainTicketFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["status"] = succeeded()
			s.Properties["ticket"] = ref(defTicket)
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in CreateTicketIn) (CreateTicketOut, error) {
			res, err := svc.CreateTicket(ctx, c.caller(), c.operationID, in.NewTicket())
			if err != nil {
				return CreateTicketOut{}, err
			}
			// Every answer names the operation in its stored (lower-case) form.
			return CreateTicketOut{
				OperationID: res.OperationID.String(), Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
				TicketID: res.Ticket.ID.String(), Ticket: contract.FromTicket(res.Ticket),
			}, nil
		},
	})

	previewTicket = newTool(spec[PreviewTicketIn, PreviewTicketOut]{
		name: ToolPreviewTicket, title: "Preview ticket", description: descPreviewTicket, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			contract.ConstrainTicketFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["would"].Enum = stringEnum(tickets.WouldCreate, tickets.WouldReplay, tickets.WouldConflict)
			s.Properties["ticket"].Properties["priority"].Enum = stringEnum(tickets.Priorities...)
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in PreviewTicketIn) (PreviewTicketOut, error) {
			pv, err := svc.PreviewTicket(ctx, c.principal.Tenant, c.operationID, in.NewTicket())
			if err != nil {
				return PreviewTicketOut{}, err
			}
			out := PreviewTicketOut{
				Ticket: PreviewTicket{
					ProjectID: pv.Ticket.ProjectID, Title: pv.Ticket.Title, Description: pv.Ticket.Description,
					Priority: string(pv.Ticket.Priority), Labels: nonNil(pv.Ticket.Labels), Parent: pv.ParentKey,
				},
				Fingerprint: pv.Fingerprint, Would: string(pv.Would), ExistingTicketID: pv.ExistingTicketID,
			}
			if pv.OperationID != nil {
				out.OperationID = pv.OperationID.String()
			}
			return out, nil
		},
	})

	getOperationStatus = newTool(spec[GetOperationStatusIn, contract.OperationStatus]{
		name: ToolGetOperationStatus, title: "Get operation status", description: descGetOperationStatus, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) { s.Properties["operation_id"].Pattern = operationIDPattern },
		output: func(s *jsonschema.Schema) {
			contract.ConstrainOperationStatus(s, slices.Concat(contract.OperationStatuses, []string{contract.StatusNotFound})...)
			s.Properties["ticket"] = ref(defTicket)
			s.Properties["deliveries"].Items = ref(defDelivery)
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in GetOperationStatusIn) (contract.OperationStatus, error) {
			st, err := svc.GetOperation(ctx, c.principal.Tenant, c.operationID)
			if errors.Is(err, operations.ErrNotFound) {
				// Proof that nothing ran under this ID for this tenant: an
				// answer, not an error.
				return operationNotFound(c.echo()), nil
			}
			if err != nil {
				return contract.OperationStatus{}, err
			}
			return contract.FromOperation(st, operationNextStep), nil
		},
	})

	getTicket = newTool(spec[GetTicketIn, GetTicketOut]{
		name: ToolGetTicket, title: "Get ticket", description: descGetTicket, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["ticket"] = ref(defTicket)
			s.Properties["links"].Items.Properties["link"].Enum = stringEnum(links.Kinds...)
			s.Properties["parent"] = contract.Nullable(s.Properties["parent"])
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in GetTicketIn) (GetTicketOut, error) {
			tk, err := svc.GetTicket(ctx, c.principal.Tenant, in.ID)
			if errcode.Of(err) == errcode.NotFound {
				return GetTicketOut{}, shownError{"no ticket " + quote(in.ID) + " exists for your tenant", err}
			}
			if err != nil {
				return GetTicketOut{}, err
			}
			ticketLinks, err := svc.TicketLinks(ctx, c.principal.Tenant, tk.ID)
			if err != nil {
				return GetTicketOut{}, err
			}
			parent, children, err := svc.Family(ctx, c.principal.Tenant, tk.ID)
			if err != nil {
				return GetTicketOut{}, err
			}
			out := GetTicketOut{Ticket: contract.FromTicket(tk), Links: contract.FromLinks(ticketLinks)}
			out.Parent, out.Children = contract.FromFamily(parent, children)
			return out, nil
		},
	})

	listTickets = newTool(spec[ListTicketsIn, ListTicketsOut]{
		name: ToolListTickets, title: "List tickets", description: descListTickets, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			p := s.Properties
			p["project_id"].MaxLength = jsonschema.Ptr(tickets.MaxProjectID)
			p["status"] = contract.StatusFilterSchema()
			p["query"].MaxLength = jsonschema.Ptr(tickets.MaxQuery)
			p["assignee"].MaxLength = jsonschema.Ptr(tickets.MaxAssignee)
			p["label"].MaxLength = jsonschema.Ptr(tickets.MaxLabel)
			p["parent"].MaxLength = jsonschema.Ptr(maxTicketRef)
			p["priority"].Enum = stringEnum(tickets.Priorities...)
			p["updated_since"].Format = "date-time"
			p["sort"].Enum = stringEnum(tickets.Sorts...)
			p["detail"].Enum = []any{contract.DetailSummary, contract.DetailFull}
			p["limit"].Minimum, p["limit"].Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(tickets.MaxTicketLimit))
			p["cursor"].MaxLength = jsonschema.Ptr(maxCursor)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["tickets"].Items = ticketOrSummary()
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in ListTicketsIn) (ListTicketsOut, error) {
			since, err := contract.ParseUpdatedSince(in.UpdatedSince)
			if err != nil {
				return ListTicketsOut{}, err
			}
			// Room for the page the service measures, which is at most the limit.
			room := cmp.Or(min(max(in.Limit, 0), tickets.MaxTicketLimit), tickets.DefaultTicketLimit)
			page := encodedPage[tickets.Ticket]{encode: contract.SummaryJSON, encoded: make([]json.RawMessage, 0, room)}
			if in.Detail == contract.DetailFull {
				page.encode = func(t tickets.Ticket) ([]byte, error) { return json.Marshal(contract.FromTicket(t)) }
			}
			listed, err := svc.ListTickets(ctx, c.caller(), tickets.ListTicketsParams{
				ProjectID: in.ProjectID, Statuses: in.Status.Domain(), Query: in.Query, Assignee: in.Assignee, Label: in.Label,
				Priority: tickets.Priority(in.Priority), Parent: in.Parent, UpdatedSince: since, Sort: tickets.Sort(in.Sort),
				Limit: in.Limit, Cursor: in.Cursor,
				MaxBytes: pageItemsBudget, Measure: page.measure, WithoutDescriptions: in.Detail != contract.DetailFull,
			})
			if err != nil {
				return ListTicketsOut{}, err
			}
			items, err := page.items(len(listed.Tickets))
			return ListTicketsOut{Tickets: items, NextCursor: listed.NextCursor}, err
		},
	})

	listProjects = newTool(spec[ListProjectsIn, ListProjectsOut]{
		name: ToolListProjects, title: "List projects", description: descListProjects, scope: authn.ScopeRead, readOnly: true,
		handle: func(ctx context.Context, svc *tickets.Service, c call, _ ListProjectsIn) (ListProjectsOut, error) {
			ps, err := svc.ListProjects(ctx, c.principal.Tenant)
			if err != nil {
				return ListProjectsOut{}, err
			}
			out := ListProjectsOut{Projects: make([]contract.Project, len(ps))}
			for i, pr := range ps {
				out.Projects[i] = contract.FromProject(pr)
			}
			if len(ps) == 0 {
				out.NextStep = fmt.Sprintf(noProjectsNextStep, quote(c.principal.Tenant), quote(c.principal.Tenant))
			}
			return out, nil
		},
	})
)

func (in CreateTicketIn) operationID() string       { return in.OperationID }
func (in PreviewTicketIn) operationID() string      { return in.OperationID }
func (in GetOperationStatusIn) operationID() string { return in.OperationID }

// operationNotFound is the status of an operation ID that nothing ran
// under, for any action: the lookup is by ID alone, so it names none.
func operationNotFound(operationID string) contract.OperationStatus {
	return contract.OperationStatus{
		OperationID: operationID, Status: contract.StatusNotFound,
		NextStep: "Nothing ran under this operation_id for your tenant: no ticket was created, updated or commented on with it. It is safe to make the call you intended (create_ticket, update_ticket or add_comment) with this operation_id now.",
	}
}

// operationNextStep is get_operation_status's next_step: what to do about
// an operation of action in status s, naming the tool to retry.
func operationNextStep(action string, s operations.Status) string {
	verb := action
	if verb == "" {
		verb = "the call"
	}
	switch s {
	case operations.StatusSucceeded:
		return contract.Done(action) + "; do not make it again. Retrying " + verb + " with the same operation_id and input returns this outcome and changes nothing."
	case operations.StatusPending:
		return "The operation is still running; check again in a moment with the same operation_id."
	case operations.StatusFailed:
		return "The operation was rejected for the reason in error; it changed nothing."
	case operations.StatusExpired:
		return "The write ran: " + verb + " succeeded under this operation_id longer ago than ticketd keeps operation records, and its record was pruned, so its result can no longer be shown. Do not make it again, with this operation_id or a new one (a retry with this one answers operation_expired and changes nothing); find what it made with list_tickets or get_ticket."
	default:
		return "The outcome is not known yet; check again shortly, or retry " + verb + " with the same operation_id and input (never a new one)."
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// quote bounds and quotes a caller-supplied value for an error message, so
// an oversized or odd argument cannot flood or garble the answer.
func quote(s string) string {
	const maxQuoted = 80
	if r := []rune(s); len(r) > maxQuoted {
		s = string(r[:maxQuoted]) + "…"
	}
	return strconv.Quote(s)
}
