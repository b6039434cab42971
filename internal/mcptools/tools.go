package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/wire"
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
// ticketd, so each says what the tool does, what its answers mean and what
// to do about each error.
const (
	descCreateTicket = `Create one ticket in one of your tenant's projects. Safe to retry: it never creates duplicates.

operation_id: before the first call, generate a fresh random UUID (version 4 or 7) for this one intended ticket. Reuse exactly the same operation_id and the same arguments on every retry of that ticket: after a timeout, a lost connection, a retryable error, or whenever you are unsure whether the call went through. A retry never creates a second ticket; it returns the original one with replayed: true. ticketd remembers a succeeded operation_id for 30 days, so retries belong within that window. Never change the operation_id to make a retry go through; only a genuinely new, different ticket gets a new operation_id.

On success: status "succeeded", ticket_id and the ticket (people refer to it by its key, e.g. SUP-42).
Errors (isError: true, error.code, and a sentence saying what to do next):
- invalid_input: nothing was attempted; fix the argument the message names and call again (the same operation_id is fine). An unknown project_id lists the known projects.
- idempotency_conflict: this operation_id was already used for a different ticket; nothing was written. Do not alter the arguments to force it through; if you really mean a new ticket, generate a new operation_id.
- operation_in_progress: a call with this operation_id is still running; wait a few seconds and retry with the same operation_id and arguments.
- outcome_unknown: the ticket may or may not have been created; call get_operation_status with this operation_id, or retry with the same operation_id and arguments (never a new one).
- operation_failed: this operation_id was used before and that attempt was recorded as failed; nothing was created. Retrying it fails the same way: fix the cause, then use a new operation_id.
- unavailable or internal: retry shortly with the same operation_id and arguments.
- forbidden: your token lacks the tickets:write scope; retrying will not help.
Use preview_ticket for a dry run that writes nothing, and list_projects to find project_id values.`

	descPreviewTicket = `Dry run of create_ticket: validates and normalises the same arguments and says what create_ticket would do, without writing anything. Safe to call any number of times.

Returns the normalised ticket (title trimmed, priority defaulted, labels trimmed, lower-cased, de-duplicated and sorted) and its fingerprint. If you pass the operation_id you intend to use, "would" tells what create_ticket would do with it:
- "create": the operation_id is unused; create_ticket would create this ticket.
- "replay": this same ticket was already created with that operation_id (existing_ticket_id); create_ticket would return it and create nothing new.
- "conflict": the operation_id was already used for a different ticket; create_ticket would fail with idempotency_conflict. Use a new operation_id only if this really is a new ticket.
A conflict is a normal answer here, not an error. Errors: invalid_input with the same messages create_ticket would give (an unknown project_id lists the known projects); forbidden without the tickets:read scope.`

	descGetOperationStatus = `Answers authoritatively "did it happen?" for an operation_id you used, or may have used, with any write: create_ticket, update_ticket or add_comment. Call it after an outcome_unknown error, a timeout or a lost connection, before deciding whether to retry.

action names the write the operation_id was used for. status is one of:
- "succeeded": it took effect; do not make it again. ticket_id and ticket (as it is now) are included for every action; version is the version an update_ticket produced; comment_id is the comment an add_comment added.
- "pending": the operation is still running; check again in a moment.
- "failed": it was rejected for the reason in error; it changed nothing.
- "unknown": not settled yet; check again shortly, or retry the same call with the same operation_id and arguments.
- "not_found": nothing ran under this operation_id for your tenant in the last 30 days (how long ticketd remembers a succeeded operation), so making the intended call with it now is safe unless you used it longer ago than that.
next_step repeats what to do in one sentence. not_found is a normal answer, not an error. Read-only.`

	descGetTicket = `Fetch one of your tenant's tickets by its ID (the UUID returned as ticket_id) or by its key (like SUP-42, any case). The ticket includes its version (pass it as if_version to update_ticket when you decide based on what you read) and its assignee (null when unassigned). Errors: not_found if your tenant has no such ticket; invalid_input if id is neither a UUID nor a key. Read-only.`

	descListTickets = `List your tenant's tickets, newest first. Optional filters, combined: project_id; status (open, in_progress, resolved or closed); query (words that must all occur in the title or description, whole words, any case: use it to find a ticket by what it is about); assignee (a subject, or "me" for tickets assigned to you); label; priority (low, normal, high or urgent). Returns at most limit tickets (default 50, at most 200); when next_cursor is present, call again with it as cursor and the same filters for the next page. Read-only.`

	descListProjects = `List your tenant's projects. Each id is a valid project_id for create_ticket, preview_ticket and list_tickets; key is the prefix of the project's ticket keys (SUP in SUP-42). An empty list means your tenant has no project yet and no ticket can be filed: next_step says how an operator creates one. Read-only.`
)

// CreateTicketIn is the input of create_ticket. It has no tenant: the tenant
// comes from the caller's token.
type CreateTicketIn struct {
	OperationID string `json:"operation_id" jsonschema:"A fresh random UUID (version 4 or 7) that you generate once for this intended ticket and reuse unchanged on every retry of it. Never change it to make a retry go through."`
	wire.TicketFields
}

// PreviewTicketIn is the input of preview_ticket: create_ticket's, with the
// operation ID optional.
type PreviewTicketIn struct {
	OperationID string `json:"operation_id,omitempty" jsonschema:"Optional: the operation_id you intend to pass to create_ticket, to learn whether it would create, replay or conflict."`
	wire.TicketFields
}

// GetOperationStatusIn is the input of get_operation_status.
type GetOperationStatusIn struct {
	OperationID string `json:"operation_id" jsonschema:"The operation_id you passed (or may have passed) to create_ticket, update_ticket or add_comment."`
}

// GetTicketIn is the input of get_ticket.
type GetTicketIn struct {
	ID string `json:"id" jsonschema:"The ticket's ID (a UUID, the ticket_id from create_ticket) or its key, like SUP-42."`
}

// ListTicketsIn is the input of list_tickets. Every field is optional.
type ListTicketsIn struct {
	ProjectID string `json:"project_id,omitempty" jsonschema:"Only tickets of this project."`
	Status    string `json:"status,omitempty" jsonschema:"Only tickets with this status: open, in_progress, resolved or closed (any case)."`
	Query     string `json:"query,omitempty" jsonschema:"Only tickets whose title or description contains every one of these words (whole words, any case)."`
	Assignee  string `json:"assignee,omitempty" jsonschema:"Only tickets assigned to this subject; me means you (the subject of your token)."`
	Label     string `json:"label,omitempty" jsonschema:"Only tickets with this label."`
	Priority  string `json:"priority,omitempty" jsonschema:"Only tickets with this priority: low, normal, high or urgent (any case)."`
	Limit     int    `json:"limit,omitempty" jsonschema:"At most this many tickets, 1-200 (default 50)."`
	Cursor    string `json:"cursor,omitempty" jsonschema:"The next_cursor of the previous page, with the same filters."`
}

// ListProjectsIn is the (empty) input of list_projects.
type ListProjectsIn struct{}

// CreateTicketOut is create_ticket's success result.
type CreateTicketOut struct {
	OperationID string      `json:"operation_id" jsonschema:"The operation_id, lower-cased."`
	Status      string      `json:"status" jsonschema:"Always succeeded."`
	Replayed    bool        `json:"replayed" jsonschema:"True when an earlier call with this operation_id created the ticket and this call only returned it."`
	TicketID    string      `json:"ticket_id" jsonschema:"The ticket's durable ID."`
	Ticket      wire.Ticket `json:"ticket"`
}

// PreviewTicket is the normalised ticket a preview shows.
type PreviewTicket struct {
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Labels      []string `json:"labels"`
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
	Ticket wire.Ticket `json:"ticket"`
}

// ListTicketsOut is list_tickets' result.
type ListTicketsOut struct {
	Tickets    []wire.Ticket `json:"tickets"`
	NextCursor string        `json:"next_cursor,omitempty" jsonschema:"Present when there are more tickets: pass it as cursor."`
}

// ListProjectsOut is list_projects' result.
type ListProjectsOut struct {
	Projects []wire.Project `json:"projects"`
	NextStep string         `json:"next_step,omitempty" jsonschema:"Present when there are no projects: what an operator must do before tickets can be filed."`
}

// noProjectsNextStep is list_projects' next_step for a tenant without a
// project: a new tenant's agent cannot file anything until an operator
// makes one, and the agent can pass this on word for word.
const noProjectsNextStep = "Your tenant %s has no project yet, so no ticket can be filed. Ask a ticketd operator to create one, e.g. " +
	"`ticketd projects create --tenant %s --id support --key SUP --name Support` on the server, " +
	"or POST /api/v1/projects with a tickets:admin token; then call list_projects again."

// Tools lists every tool ticketd serves, in the order tools/list shows them.
// Adding a tool is one value below and its entry here.
func Tools() []Tool {
	return []Tool{
		createTicket, previewTicket, updateTicket, addComment, getOperationStatus,
		getTicket, listTickets, listComments, listProjects,
	}
}

// The tools. Each is one value: name, description, schemas, annotations,
// scope and handler together.
var (
	createTicket = newTool(spec[CreateTicketIn, CreateTicketOut]{
		name: ToolCreateTicket, title: "Create ticket", description: descCreateTicket, scope: authn.ScopeWrite,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			wire.ConstrainTicketFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["status"].Enum = []any{"succeeded"}
			ticketObject(s.Properties["ticket"])
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in CreateTicketIn) (CreateTicketOut, error) {
			res, err := svc.CreateTicket(ctx, c.principal.Tenant, c.principal.Subject, in.OperationID, in.NewTicket())
			if err != nil {
				return CreateTicketOut{}, err
			}
			// Every answer names the operation in its stored (lower-case) form.
			return CreateTicketOut{
				OperationID: c.operationID, Status: string(operations.StatusSucceeded), Replayed: res.Replayed,
				TicketID: res.Ticket.ID.String(), Ticket: wire.FromTicket(res.Ticket),
			}, nil
		},
	})

	previewTicket = newTool(spec[PreviewTicketIn, PreviewTicketOut]{
		name: ToolPreviewTicket, title: "Preview ticket (dry run)", description: descPreviewTicket, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			s.Properties["operation_id"].Pattern = operationIDPattern
			wire.ConstrainTicketFields(s)
		},
		output: func(s *jsonschema.Schema) {
			s.Properties["would"].Enum = stringEnum(tickets.WouldCreate, tickets.WouldReplay, tickets.WouldConflict)
			s.Properties["ticket"].Properties["priority"].Enum = stringEnum(tickets.Priorities...)
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in PreviewTicketIn) (PreviewTicketOut, error) {
			pv, err := svc.PreviewTicket(ctx, c.principal.Tenant, in.OperationID, in.NewTicket())
			if err != nil {
				return PreviewTicketOut{}, err
			}
			out := PreviewTicketOut{
				Ticket: PreviewTicket{
					ProjectID: pv.Ticket.ProjectID, Title: pv.Ticket.Title, Description: pv.Ticket.Description,
					Priority: string(pv.Ticket.Priority), Labels: nonNil(pv.Ticket.Labels),
				},
				Fingerprint: pv.Fingerprint, Would: string(pv.Would), ExistingTicketID: pv.ExistingTicketID,
			}
			if pv.OperationID != nil {
				out.OperationID = pv.OperationID.String()
			}
			return out, nil
		},
	})

	getOperationStatus = newTool(spec[GetOperationStatusIn, wire.OperationStatus]{
		name: ToolGetOperationStatus, title: "Get operation status", description: descGetOperationStatus, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) { s.Properties["operation_id"].Pattern = operationIDPattern },
		output: func(s *jsonschema.Schema) {
			wire.ConstrainOperationStatus(s, slices.Concat(wire.LedgerStatuses, []string{wire.StatusNotFound})...)
		},
		handle: func(ctx context.Context, svc *tickets.Service, c call, in GetOperationStatusIn) (wire.OperationStatus, error) {
			st, err := svc.GetOperation(ctx, c.principal.Tenant, in.OperationID)
			if errors.Is(err, operations.ErrNotFound) {
				// Proof that nothing ran under this ID for this tenant: an
				// answer, not an error.
				return wire.OperationNotFound(c.operationID), nil
			}
			if err != nil {
				return wire.OperationStatus{}, err
			}
			return wire.FromOperation(st), nil
		},
	})

	getTicket = newTool(spec[GetTicketIn, GetTicketOut]{
		name: ToolGetTicket, title: "Get ticket", description: descGetTicket, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			s.Properties["id"].MinLength, s.Properties["id"].MaxLength = jsonschema.Ptr(1), jsonschema.Ptr(maxTicketRef)
		},
		output: func(s *jsonschema.Schema) { ticketObject(s.Properties["ticket"]) },
		handle: func(ctx context.Context, svc *tickets.Service, c call, in GetTicketIn) (GetTicketOut, error) {
			tk, err := svc.GetTicket(ctx, c.principal.Tenant, in.ID)
			if errcode.Of(err) == errcode.NotFound {
				return GetTicketOut{}, shownError{"no ticket " + quote(in.ID) + " exists for your tenant", err}
			}
			if err != nil {
				return GetTicketOut{}, err
			}
			return GetTicketOut{Ticket: wire.FromTicket(tk)}, nil
		},
	})

	listTickets = newTool(spec[ListTicketsIn, ListTicketsOut]{
		name: ToolListTickets, title: "List tickets", description: descListTickets, scope: authn.ScopeRead, readOnly: true,
		input: func(s *jsonschema.Schema) {
			p := s.Properties
			p["project_id"].MaxLength = jsonschema.Ptr(tickets.MaxProjectID)
			// status and priority: no enums, the service normalises case
			// as it does for REST (tickets.ListTickets).
			p["query"].MaxLength = jsonschema.Ptr(tickets.MaxQuery)
			p["assignee"].MaxLength = jsonschema.Ptr(tickets.MaxAssignee)
			p["label"].MaxLength = jsonschema.Ptr(tickets.MaxLabel)
			p["limit"].Minimum, p["limit"].Maximum = jsonschema.Ptr(1.0), jsonschema.Ptr(float64(tickets.MaxLimit))
			p["limit"].Default = json.RawMessage(fmt.Sprint(tickets.DefaultLimit))
			p["cursor"].MaxLength = jsonschema.Ptr(maxCursor)
		},
		output: func(s *jsonschema.Schema) { ticketObject(s.Properties["tickets"].Items) },
		handle: func(ctx context.Context, svc *tickets.Service, c call, in ListTicketsIn) (ListTicketsOut, error) {
			page, err := svc.ListTickets(ctx, c.principal.Tenant, tickets.ListTicketsParams{
				ProjectID: in.ProjectID, Status: tickets.Status(in.Status), Query: in.Query, Assignee: wire.AssigneeFilter(in.Assignee, c.principal.Subject),
				Label: in.Label, Priority: tickets.Priority(in.Priority), Limit: in.Limit, Cursor: in.Cursor,
			})
			if err != nil {
				return ListTicketsOut{}, err
			}
			out := ListTicketsOut{Tickets: make([]wire.Ticket, len(page.Tickets)), NextCursor: page.NextCursor}
			for i, tk := range page.Tickets {
				out.Tickets[i] = wire.FromTicket(tk)
			}
			return out, nil
		},
	})

	listProjects = newTool(spec[ListProjectsIn, ListProjectsOut]{
		name: ToolListProjects, title: "List projects", description: descListProjects, scope: authn.ScopeRead, readOnly: true,
		handle: func(ctx context.Context, svc *tickets.Service, c call, _ ListProjectsIn) (ListProjectsOut, error) {
			ps, err := svc.ListProjects(ctx, c.principal.Tenant)
			if err != nil {
				return ListProjectsOut{}, err
			}
			out := ListProjectsOut{Projects: make([]wire.Project, len(ps))}
			for i, pr := range ps {
				out.Projects[i] = wire.FromProject(pr)
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

// canonicalOperationID returns the stored (lower-case) form of a valid
// operation ID, to echo it in answers, or "" for an invalid one.
func canonicalOperationID(s string) string {
	id, err := operations.ParseID(s)
	if err != nil {
		return ""
	}
	return id.String()
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
