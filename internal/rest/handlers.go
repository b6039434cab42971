package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Handlers decode, call the service with the principal's tenant, and map the
// result; authentication and scopes are checked by middleware in routes.go.

// newProjectBody is POST /api/v1/projects.
type newProjectBody struct {
	ID      string       `json:"id"`
	Key     string       `json:"key"`
	Name    string       `json:"name"`
	Backend *backendBody `json:"backend,omitempty"`
}

// backendBody is contract.Backend, decoded refusing members it does not
// have, so that a retired token_env is named rather than silently dropped.
type backendBody contract.Backend

func (b *backendBody) UnmarshalJSON(raw []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil {
		return invalid("backend", "must be a JSON object")
	}
	known := jsonNames(&contract.Backend{})
	var fields []tickets.FieldError
	for name := range members {
		switch {
		case name == "token_env":
			fields = append(fields, tickets.FieldError{Field: "backend.token_env",
				Message: "is retired: name a tracker credential the operator declared in backend.credential instead (docs/trackers.md)"})
		case !known[name]:
			fields = append(fields, tickets.FieldError{Field: "backend." + name, Message: "is not a known field" + knownList(known)})
		}
	}
	if len(fields) > 0 {
		slices.SortFunc(fields, func(a, b tickets.FieldError) int { return strings.Compare(a.Field, b.Field) })
		return &tickets.ValidationError{Fields: fields}
	}
	return json.Unmarshal(raw, (*contract.Backend)(b))
}

// ticketList holds contract.Ticket values, or contract.TicketSummary values with
// detail=summary.
type ticketList struct {
	Tickets    []any  `json:"tickets"`
	NextCursor string `json:"next_cursor,omitempty"`
}

type operationList struct {
	Operations []contract.OperationStatus `json:"operations"`
	NextCursor string                     `json:"next_cursor,omitempty"`
}

type projectList struct {
	Projects []contract.Project `json:"projects"`
}

// createTicket is POST /api/v1/tickets. The Idempotency-Key is the operation
// ID of the one CreateTicket both transports share, so a retry here, or over
// MCP, with the same key and intent answers the same ticket.
func (a *api) createTicket(w http.ResponseWriter, r *http.Request) {
	id, err := idempotencyKey(r.Header)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	key := id.String() // the stored, lower-case form every answer echoes
	// The body is create_ticket's arguments without operation_id, which
	// travels in Idempotency-Key.
	var body contract.TicketFields
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, key)
		return
	}
	res, err := a.svc.CreateTicket(r.Context(), caller(r), id, body.NewTicket())
	if err != nil {
		fail(w, r, err, key)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, contract.FromTicket(res.Ticket))
		return
	}
	w.Header().Set("Location", "/api/v1/tickets/"+res.Ticket.ID.String())
	writeJSON(w, http.StatusCreated, contract.FromTicket(res.Ticket))
}

// getTicket is GET /api/v1/tickets/{id-or-key}: the ticket with its parent
// and children, read as get_ticket reads them. Another tenant's ticket is
// not_found, exactly like a missing one.
func (a *api) getTicket(w http.ResponseWriter, r *http.Request) {
	tenant := principal(r).Tenant
	t, err := a.svc.GetTicket(r.Context(), tenant, chi.URLParam(r, "id_or_key"))
	if err != nil {
		fail(w, r, err, "")
		return
	}
	parent, children, err := a.svc.Family(r.Context(), tenant, t.ID)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := contract.TicketWithFamily{Ticket: contract.FromTicket(t)}
	out.Parent, out.Children = contract.FromFamily(parent, children)
	setETag(w, t.Version)
	writeJSON(w, http.StatusOK, out)
}

// listTickets is GET /api/v1/tickets, newest first unless sort says
// otherwise; assignee=me is the caller, assignee=none unassigned; status
// takes one status or several, comma-separated; detail=summary leaves the
// descriptions out (full tickets by default, as operators' scripts expect).
func (a *api) listTickets(w http.ResponseWriter, r *http.Request) {
	q, limit, err := pageParams(r, "project_id", "status", "query", "assignee", "label", "priority", "updated_since", "sort", "detail", "parent")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	since, err := contract.ParseUpdatedSince(q.Get("updated_since"))
	if err != nil {
		fail(w, r, err, "")
		return
	}
	item := func(t tickets.Ticket) any { return contract.FromTicket(t) }
	switch q.Get("detail") {
	case "", contract.DetailFull:
	case contract.DetailSummary:
		item = func(t tickets.Ticket) any { return contract.SummaryOf(t) }
	default:
		fail(w, r, invalid("detail", fmt.Sprintf("must be summary or full, got %q", q.Get("detail"))), "")
		return
	}
	var statuses []tickets.Status
	if v := q.Get("status"); v != "" {
		for _, st := range strings.Split(v, ",") {
			statuses = append(statuses, tickets.Status(st))
		}
	}
	page, err := a.svc.ListTickets(r.Context(), caller(r), tickets.ListTicketsParams{
		ProjectID: q.Get("project_id"), Statuses: statuses, Query: q.Get("query"),
		Assignee: q.Get("assignee"), Label: q.Get("label"),
		Priority: tickets.Priority(q.Get("priority")), Parent: q.Get("parent"), UpdatedSince: since, Sort: tickets.Sort(q.Get("sort")),
		Limit: limit, Cursor: q.Get("cursor"), WithoutDescriptions: q.Get("detail") == contract.DetailSummary,
	})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := ticketList{Tickets: make([]any, len(page.Tickets)), NextCursor: page.NextCursor}
	for i, t := range page.Tickets {
		out.Tickets[i] = item(t)
	}
	writeJSON(w, http.StatusOK, out)
}

// getOperation is GET /api/v1/operations/{operation_id}: what became of an
// Idempotency-Key. A write whose record was pruned is 200 with status
// expired; an ID nothing ran under is a 404 not_found, which proves that no
// ticket was created with it.
func (a *api) getOperation(w http.ResponseWriter, r *http.Request) {
	id, err := pathOperationID(r)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	st, err := a.svc.GetOperation(r.Context(), principal(r).Tenant, id)
	if err != nil {
		fail(w, r, err, id.String())
		return
	}
	writeJSON(w, http.StatusOK, contract.FromOperation(st, operationNextStep))
}

// listOperations is GET /api/v1/operations, newest first; status=unknown or
// status=pending finds the operations that need an operator's attention.
func (a *api) listOperations(w http.ResponseWriter, r *http.Request) {
	q, limit, err := pageParams(r, "status")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	page, err := a.svc.ListOperations(r.Context(), principal(r).Tenant, tickets.ListOperationsParams{
		Status: operations.Status(q.Get("status")), Limit: limit, Cursor: q.Get("cursor"),
	})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := operationList{Operations: make([]contract.OperationStatus, len(page.Operations)), NextCursor: page.NextCursor}
	for i, rec := range page.Operations {
		out.Operations[i] = contract.FromOperation(tickets.OperationStatus{Record: rec}, operationNextStep)
	}
	writeJSON(w, http.StatusOK, out)
}

// listProjects is GET /api/v1/projects.
func (a *api) listProjects(w http.ResponseWriter, r *http.Request) {
	if _, err := queryParams(r); err != nil {
		fail(w, r, err, "")
		return
	}
	ps, err := a.svc.ListProjects(r.Context(), principal(r).Tenant)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := projectList{Projects: make([]contract.Project, len(ps))}
	for i, p := range ps {
		out.Projects[i] = contract.FromProject(p)
	}
	writeJSON(w, http.StatusOK, out)
}

// createProject is POST /api/v1/projects (tickets:admin).
func (a *api) createProject(w http.ResponseWriter, r *http.Request) {
	var body newProjectBody
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, "")
		return
	}
	p := tickets.Project{ID: body.ID, Key: body.Key, Name: body.Name}
	if b := body.Backend; b != nil {
		p.Backend = contract.Backend(*b).TrackerBackend()
	}
	p, err := a.svc.CreateProject(r.Context(), principal(r).Tenant, p)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusCreated, contract.FromProject(p))
}

// operationNextStep is an operation status's next_step for an operator:
// what to do about an operation in status s, in terms of requests.
func operationNextStep(action string, s operations.Status) string {
	switch s {
	case operations.StatusSucceeded:
		return contract.Done(action) + "; do not send it again. The same request with the same Idempotency-Key returns this outcome and changes nothing."
	case operations.StatusPending:
		return "The operation is still running; GET it again in a moment."
	case operations.StatusFailed:
		return "The operation was rejected for the reason in error; it changed nothing."
	case operations.StatusExpired:
		return "The write ran, longer ago than ticketd keeps operation records, and its record was pruned, so its result can no longer be shown. Do not send it again under this Idempotency-Key or a new one (this one answers 409 operation_expired and changes nothing); find what it made with GET /api/v1/tickets."
	default:
		return "The outcome is not known yet; GET it again shortly, or send the same request with the same Idempotency-Key (never a new one)."
	}
}
