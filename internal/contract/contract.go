// Package contract is the public contract both transports speak
// (docs/contract.md): the shapes MCP and REST return (ticket, comment,
// event, operation status) and accept (TicketFields, TicketUpdateFields,
// CommentFields, BulkUpdateFields), their JSON Schemas, and the closed
// vocabularies they declare, so a ticket reads the same over MCP, over REST
// and in a webhook's payload. What a transport says in its own words (next
// steps, tool descriptions) stays in that transport.
package contract

import (
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Ticket is the ticket object of the public contract.
type Ticket struct {
	ID          string    `json:"id" jsonschema:"durable ticket ID (UUID)"`
	Key         string    `json:"key" jsonschema:"human-readable key, project key and number, e.g. SUP-42"`
	ProjectID   string    `json:"project_id" jsonschema:"project the ticket belongs to"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Priority    string    `json:"priority" jsonschema:"low, normal, high or urgent"`
	Status      string    `json:"status" jsonschema:"open, in_progress, resolved or closed"`
	Labels      []string  `json:"labels" jsonschema:"normalised labels (lower-case, sorted, distinct); always an array"`
	Reporter    string    `json:"reporter" jsonschema:"subject of the token that created the ticket"`
	Assignee    *string   `json:"assignee" jsonschema:"subject the ticket is assigned to, or null when unassigned"`
	Version     int64     `json:"version" jsonschema:"1 at creation, +1 on every change of the ticket's fields (comments do not change it); pass it as if_version (MCP) or If-Match (REST) to update only this version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// ExternalURL is a tracker-backed ticket's issue page. Only the URL
	// (it names the repository and number), undescribed: every tool's
	// schema carries the ticket, within the tools/list budget
	// (docs/contract.md); get_operation_status's downstream has external_id.
	ExternalURL string `json:"external_url,omitempty"`
}

// FromTicket converts a domain ticket.
func FromTicket(t tickets.Ticket) Ticket {
	labels := t.Labels
	if labels == nil {
		labels = []string{}
	}
	return Ticket{
		ID: t.ID.String(), Key: t.Key, ProjectID: t.ProjectID, Title: t.Title, Description: t.Description,
		Priority: string(t.Priority), Status: string(t.Status), Labels: labels, Reporter: t.Reporter,
		Assignee: assignee(t.Assignee), Version: t.Version, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt,
		ExternalURL: t.ExternalURL,
	}
}

// TicketSummary is a ticket as a list shows it by default (docs/contract.md#lists-and-the-context-budget):
// enough to pick a ticket and decide on it, without the description, which
// get_ticket (or detail "full") returns.
type TicketSummary struct {
	ID        string    `json:"id"`
	Key       string    `json:"key"`
	ProjectID string    `json:"project_id"`
	Title     string    `json:"title"`
	Status    string    `json:"status"`
	Priority  string    `json:"priority"`
	Assignee  *string   `json:"assignee"`
	Labels    []string  `json:"labels"`
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SummaryOf converts a domain ticket to its summary.
func SummaryOf(t tickets.Ticket) TicketSummary {
	labels := t.Labels
	if labels == nil {
		labels = []string{}
	}
	return TicketSummary{
		ID: t.ID.String(), Key: t.Key, ProjectID: t.ProjectID, Title: t.Title, Status: string(t.Status),
		Priority: string(t.Priority), Assignee: assignee(t.Assignee), Labels: labels, Version: t.Version,
		UpdatedAt: t.UpdatedAt,
	}
}

// Detail levels of a ticket list.
const (
	DetailSummary = "summary"
	DetailFull    = "full"
)

// assignee is the contract's form of an assignee: null when unassigned.
func assignee(a string) *string {
	if a == "" {
		return nil
	}
	return &a
}

// Project is the project object of the public contract.
type Project struct {
	ID   string `json:"id" jsonschema:"project ID to pass as project_id, e.g. support"`
	Key  string `json:"key" jsonschema:"prefix of the project's ticket keys, e.g. SUP"`
	Name string `json:"name"`
}

// Backend is the tracker of a tracker-backed project as an admin gives it
// (POST /api/v1/projects). It names a credential the operator declared
// (docs/trackers.md), never a token or the variable holding one. Projects
// are listed without it: agents need not know, and every byte of
// list_projects' schema counts against tools/list.
type Backend struct {
	Kind       string `json:"kind" jsonschema:"github or jira"`
	Repository string `json:"repository,omitempty" jsonschema:"github: owner/name"`
	APIURL     string `json:"api_url,omitempty" jsonschema:"github: the https API root on a host the operator allows; default https://api.github.com/"`
	Credential string `json:"credential" jsonschema:"the name of a tracker credential the operator declared for this tenant"`
	// Jira (DESIGN §22).
	Site        string            `json:"site,omitempty" jsonschema:"jira: the site's root, e.g. https://acme.atlassian.net"`
	ProjectKey  string            `json:"project_key,omitempty" jsonschema:"jira: the project key, e.g. OPS"`
	IssueType   string            `json:"issue_type,omitempty" jsonschema:"jira: default Task"`
	StatusMap   map[string]string `json:"status_map,omitempty" jsonschema:"jira: the Jira status of each ticket status; default open To Do, in_progress In Progress, resolved and closed Done"`
	PriorityMap map[string]string `json:"priority_map,omitempty" jsonschema:"jira: the Jira priority of each ticket priority; default low Low, normal Medium, high High, urgent Highest"`
}

// TrackerBackend is b as the domain holds it.
func (b Backend) TrackerBackend() *tracker.Backend {
	return &tracker.Backend{Kind: b.Kind, Repository: b.Repository, APIURL: b.APIURL, Credential: b.Credential,
		Site: b.Site, ProjectKey: b.ProjectKey, IssueType: b.IssueType, StatusMap: b.StatusMap, PriorityMap: b.PriorityMap}
}

// FromProject converts a domain project.
func FromProject(p tickets.Project) Project {
	return Project{ID: p.ID, Key: p.Key, Name: p.Name}
}

// StatusNotFound is the operation status reported for an ID that has no
// record for the tenant: proof that nothing ran under it.
const StatusNotFound = "not_found"

// OperationStatus is the answer of get_operation_status and of
// GET /api/v1/operations/{operation_id}.
type OperationStatus struct {
	OperationID string `json:"operation_id"`
	// Action is absent only from a not_found answer: nothing ran, so no
	// action is known.
	Action     string      `json:"action,omitempty" jsonschema:"the write the ID was used for: create_ticket, update_ticket or add_comment (absent when status is not_found)"`
	Status     string      `json:"status" jsonschema:"succeeded, failed, pending, unknown, expired (it ran; its record was pruned) or not_found"`
	TicketID   string      `json:"ticket_id,omitempty" jsonschema:"the ticket the operation created, updated or commented on, when succeeded"`
	Ticket     *Ticket     `json:"ticket,omitempty" jsonschema:"that ticket as it is now, when succeeded"`
	Version    int64       `json:"version,omitempty" jsonschema:"update_ticket: the version this update produced (the ticket may be later now)"`
	CommentID  string      `json:"comment_id,omitempty" jsonschema:"add_comment: the comment it added"`
	Error      string      `json:"error,omitempty" jsonschema:"why it failed, when failed"`
	CreatedAt  *time.Time  `json:"created_at,omitempty"`
	UpdatedAt  *time.Time  `json:"updated_at,omitempty"`
	NextStep   string      `json:"next_step" jsonschema:"what to do next, in one sentence"`
	Deliveries []Delivery  `json:"deliveries,omitempty" jsonschema:"what registered webhooks have been told of this write, one per webhook; the write succeeded either way"`
	Downstream *Downstream `json:"downstream,omitempty" jsonschema:"tracker-backed projects: what is known of the write in the tracker"`
	History    []History   `json:"history,omitempty" jsonschema:"tracker-backed projects: each request, look at the tracker, duplicate found and closed, and operator's finding, oldest first"`
	Approval   *Approval   `json:"approval,omitempty" jsonschema:"who approved this write, how and when, when it needed a person's yes"`
}

// Downstream is what is known of an operation's effect in an external
// tracker (docs/contract.md#tracker-backed-projects).
type Downstream struct {
	System      string     `json:"system" jsonschema:"the tracker: github"`
	Status      string     `json:"status" jsonschema:"pending, succeeded, unknown or failed"`
	ExternalID  string     `json:"external_id,omitempty" jsonschema:"the issue, e.g. owner/name#12"`
	ExternalURL string     `json:"external_url,omitempty"`
	Attempts    int        `json:"attempts" jsonschema:"requests that may have reached the tracker"`
	LastError   string     `json:"last_error,omitempty"`
	NextCheckAt *time.Time `json:"next_check_at,omitempty" jsonschema:"when ticketd looks at the tracker again"`
}

// History is one step of an operation's reconciliation.
type History struct {
	At     time.Time `json:"at"`
	Kind   string    `json:"kind" jsonschema:"claimed, sent, no_answer, not_sent, looked, found, created, duplicate, resolved, …"`
	Actor  string    `json:"actor" jsonschema:"ticketd, or the operator who acted"`
	Detail string    `json:"detail"`
}

// Approval is who approved a write, how and when (docs/contract.md#approval).
type Approval struct {
	ApprovalID  string     `json:"approval_id"`
	RequestedBy string     `json:"requested_by" jsonschema:"subject of the token that asked for the write"`
	DecidedBy   string     `json:"decided_by" jsonschema:"subject of the person who approved"`
	DecidedVia  string     `json:"decided_via" jsonschema:"form (in the agent's client), url or console (the console's approval page), or rest (POST /api/v1/approvals/{id}/approve)"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
}

// FromApproval converts a decided approval.
func FromApproval(a approval.Approval) *Approval {
	return &Approval{ApprovalID: a.ID, RequestedBy: a.RequestedBy, DecidedBy: a.DecidedBy, DecidedVia: string(a.DecidedVia), DecidedAt: a.DecidedAt}
}

// Delivery is what one registered webhook has been told of an operation's
// event.
type Delivery struct {
	WebhookID string `json:"webhook_id" jsonschema:"the registered webhook (GET /api/v1/webhooks/{id})"`
	Status    string `json:"status" jsonschema:"pending, delivered or failed"`
	Attempts  int    `json:"attempts" jsonschema:"requests made so far"`
	LastError string `json:"last_error,omitempty" jsonschema:"why the last attempt did not deliver"`
}

// NextStep says what to do about an operation of action in status s, in a
// transport's own words (the MCP tools' names, or REST's requests).
type NextStep func(action string, s operations.Status) string

// FromOperation converts the service's answer for a recorded operation; next
// writes its next_step.
func FromOperation(st tickets.OperationStatus, next NextStep) OperationStatus {
	r := st.Record
	out := OperationStatus{
		OperationID: r.OperationID.String(), Action: r.Action, Status: string(r.Status), Error: r.Error,
		CreatedAt: &r.CreatedAt, UpdatedAt: &r.UpdatedAt, NextStep: next(r.Action, r.Status),
		Version: st.Version,
	}
	if r.Status == operations.StatusExpired {
		// A tombstone keeps when it was pruned (updated_at), not when the
		// write ran.
		out.CreatedAt = nil
	}
	switch {
	case st.TicketID != nil:
		out.TicketID = st.TicketID.String()
	case r.Status == operations.StatusSucceeded && r.Action == tickets.ActionCreateTicket:
		// A bare record (a list of operations) still names what create made.
		out.TicketID = r.ResultID
	}
	if st.CommentID != nil {
		out.CommentID = st.CommentID.String()
	}
	if st.Ticket != nil {
		t := FromTicket(*st.Ticket)
		out.Ticket = &t
	}
	if d := st.Downstream; d != nil {
		ds := &Downstream{System: d.System, Status: d.Status, ExternalID: d.ExternalID, ExternalURL: d.ExternalURL,
			Attempts: d.Attempts, LastError: d.LastError, NextCheckAt: d.NextCheckAt}
		out.Downstream = ds
	}
	for _, h := range st.History {
		out.History = append(out.History, History{At: h.At, Kind: h.Kind, Actor: h.Actor, Detail: h.Detail})
	}
	if st.Approval != nil {
		out.Approval = FromApproval(*st.Approval)
	}
	for _, d := range st.Deliveries {
		out.Deliveries = append(out.Deliveries, Delivery{
			WebhookID: d.WebhookID.String(), Status: d.Status, Attempts: d.Attempts, LastError: d.LastError,
		})
	}
	return out
}

// Done says what a succeeded operation of action did, naming the fields
// of OperationStatus that show it; each transport's NextStep goes on from
// it.
func Done(action string) string {
	switch action {
	case tickets.ActionCreateTicket:
		return "The ticket was created (see ticket_id)"
	case tickets.ActionUpdateTicket:
		return "The update was applied (version is the version it produced; the ticket may have changed since)"
	case tickets.ActionAddComment:
		return "The comment was added (see comment_id)"
	}
	return "The operation took effect"
}
