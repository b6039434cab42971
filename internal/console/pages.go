package console

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/subtasks"
	"github.com/ticketd/ticketd/internal/tickets"
)

// pageSize is how many tickets or operations a console page lists.
const pageSize = 25

// newOperationID mints the idempotency key a form carries from the moment it
// is rendered: a UUIDv4, as the contract asks of callers.
func newOperationID() string { return uuid.NewString() }

// ticketFilters are the tickets page's query parameters, echoed into its form.
type ticketFilters struct {
	Query, Priority, Assignee, Label, Project, Sort string
	// Parent, when set, lists that ticket's sub-tasks (the ticket page's
	// link to them).
	Parent string
	// Statuses are the statuses chosen (any of them); none is every status.
	Statuses []string
	// View is one of the views operators asked for (docs/operators.md, Console): "" for
	// all tickets, viewAttention or viewMine.
	View string
}

// The views of the tickets page.
const (
	// viewAttention is what needs a person: unassigned and not closed,
	// most urgent first.
	viewAttention = "attention"
	// viewMine is the tickets assigned to the signed-in person.
	viewMine = "mine"
)

func (f ticketFilters) values() url.Values {
	v := url.Values{}
	for k, s := range map[string]string{"q": f.Query, "priority": f.Priority, "assignee": f.Assignee,
		"label": f.Label, "project": f.Project, "sort": f.Sort, "view": f.View, "parent": f.Parent} {
		if s != "" {
			v.Set(k, s)
		}
	}
	for _, st := range f.Statuses {
		v.Add("status", st)
	}
	return v
}

// statusChoice is one status checkbox of the filter form.
type statusChoice struct {
	Status  tickets.Status
	Checked bool
}

// sortChoice is one entry of the sort menu.
type sortChoice struct {
	Sort  tickets.Sort
	Label string
}

// sortChoices are the orders the console offers; the first, the empty
// sort, is the list's default.
var sortChoices = []sortChoice{
	{"", "default order"},
	{tickets.SortCreatedDesc, "newest first"},
	{tickets.SortUpdatedDesc, "recently updated"},
	{tickets.SortPriorityDesc, "most urgent first"},
}

// viewTab is one tab of the tickets page.
type viewTab struct {
	View, Label, URL string
}

var viewTabs = []viewTab{
	{"", "All tickets", "/console/tickets"},
	{viewAttention, "Needs attention", "/console/tickets?view=" + viewAttention},
	{viewMine, "Mine", "/console/tickets?view=" + viewMine},
}

type ticketsData struct {
	Filters    ticketFilters
	Statuses   []statusChoice
	Sorts      []sortChoice
	Views      []viewTab
	Priorities []tickets.Priority
	Projects   []tickets.Project
	Tickets    []tickets.Ticket
	NextURL    string // empty on the last page
	FirstURL   string // set when not on the first page
	// Bulk is the bar that changes the selected tickets, for writers.
	Bulk bulkData
}

// listParams is the filters as the service takes them: a view fills in
// what it means, and "me" (the caller) is passed on for the service.
func (f ticketFilters) listParams() tickets.ListTicketsParams {
	p := tickets.ListTicketsParams{
		ProjectID: f.Project, Query: f.Query, Assignee: f.Assignee, Label: f.Label,
		Priority: tickets.Priority(f.Priority), Sort: tickets.Sort(f.Sort), Parent: f.Parent,
	}
	for _, st := range f.Statuses {
		p.Statuses = append(p.Statuses, tickets.Status(st))
	}
	switch f.View {
	case viewAttention:
		p.Assignee = tickets.AssigneeNone
		if len(p.Statuses) == 0 {
			p.Statuses = []tickets.Status{tickets.StatusOpen, tickets.StatusInProgress, tickets.StatusResolved}
		}
		if p.Sort == "" {
			p.Sort = tickets.SortPriorityDesc
		}
	case viewMine:
		p.Assignee = tickets.AssigneeMe
	}
	// A person may type "Me" or " me"; the service resolves the one
	// spelling to the caller.
	if strings.EqualFold(strings.TrimSpace(p.Assignee), tickets.AssigneeMe) {
		p.Assignee = tickets.AssigneeMe
	}
	return p
}

func (c *console) ticketsPage(w http.ResponseWriter, r *http.Request, req *request) {
	q := r.URL.Query()
	f := ticketFilters{
		Query: q.Get("q"), Priority: q.Get("priority"), Assignee: q.Get("assignee"), Label: q.Get("label"),
		Project: q.Get("project"), Sort: q.Get("sort"), Statuses: q["status"], Parent: q.Get("parent"),
	}
	if v := q.Get("view"); v == viewAttention || v == viewMine {
		f.View = v
	}
	data := ticketsData{Filters: f, Sorts: sortChoices, Views: viewTabs, Priorities: tickets.Priorities}
	for _, st := range tickets.Statuses {
		data.Statuses = append(data.Statuses, statusChoice{Status: st, Checked: slices.Contains(f.Statuses, string(st))})
	}
	projects, err := c.svc.ListProjects(r.Context(), req.principal.Tenant)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	data.Projects = projects
	if req.principal.HasScope(authn.ScopeWrite) {
		if data.Bulk, err = c.bulkChoices(r, req, bulkForm{OperationID: newOperationID()}); err != nil {
			c.failErr(w, r, req, err)
			return
		}
	}
	cursor := q.Get("cursor")
	params := f.listParams()
	// The list shows no descriptions; the ticket's page reads its own.
	params.Limit, params.Cursor, params.WithoutDescriptions = pageSize, cursor, true
	page, err := c.svc.ListTickets(r.Context(), req.caller(), params)
	l := layout{Title: "Tickets", Nav: "/console/tickets", Notice: notices[q.Get("done")]}
	if err != nil {
		p, status := c.problemOf(r, err)
		l.Problem = p
		c.render(w, r, req, status, "tickets", l, data)
		return
	}
	data.Tickets = page.Tickets
	if page.NextCursor != "" {
		v := f.values()
		v.Set("cursor", page.NextCursor)
		data.NextURL = "/console/tickets?" + v.Encode()
	}
	if cursor != "" {
		data.FirstURL = "/console/tickets?" + f.values().Encode()
	}
	c.render(w, r, req, http.StatusOK, "tickets", l, data)
}

// Forms of the ticket page. Each carries its own operation ID and, for
// updates, the version it was rendered from (if_version).
type (
	editForm struct {
		OperationID, Title, Description, Priority, Labels string
		// LabelsBefore are the labels the form was rendered with, one
		// hidden field each: the labels the person removed are those
		// missing from Labels.
		LabelsBefore []string
		IfVersion    int64
	}
	statusForm struct {
		OperationID string
		IfVersion   int64
	}
	assignForm struct {
		OperationID, Assignee string
		IfVersion             int64
	}
	commentForm struct {
		OperationID, Body string
	}
)

type ticketData struct {
	Ticket       tickets.Ticket
	Moves        []tickets.Status
	Priorities   []tickets.Priority
	Events       []tickets.Event
	Comments     []tickets.Comment
	MoreHistory  string // URL of the next page of history, if any
	MoreComments string
	Edit         editForm
	Status       statusForm
	Assign       assignForm
	Comment      commentForm
	// Links are the ticket's links, both ends' (each read from this end),
	// and Link the form that adds one.
	Links     []linkView
	LinkKinds []links.Kind
	Link      linkForm
	// People is the tenant directory, the assignee picker's choices.
	People []people.User
	// Parent (nil: none) and Children are the ticket's place in the
	// sub-task tree, read as get_ticket reads them (Service.Family).
	Parent   *subtasks.Ref
	Children subtasks.Children
}

// loadTicket reads a ticket, its history and comments, and renders fresh
// forms for it. history and comments are cursors from the page's links.
func (c *console) loadTicket(r *http.Request, req *request, ref string) (ticketData, error) {
	ctx, tenant := r.Context(), req.principal.Tenant
	t, err := c.svc.GetTicket(ctx, tenant, ref)
	if err != nil {
		return ticketData{}, err
	}
	q := r.URL.Query()
	events, err := c.svc.ListEvents(ctx, tenant, t.ID.String(), tickets.ListParams{Limit: pageSize, Cursor: q.Get("history")})
	if err != nil {
		return ticketData{}, err
	}
	comments, err := c.svc.ListComments(ctx, tenant, t.ID.String(), tickets.ListParams{Limit: pageSize, Cursor: q.Get("comments")})
	if err != nil {
		return ticketData{}, err
	}
	ticketLinks, err := c.svc.TicketLinks(ctx, tenant, t.ID)
	if err != nil {
		return ticketData{}, err
	}
	people, err := c.svc.People().List(ctx, tenant, "")
	if err != nil {
		return ticketData{}, err
	}
	parent, children, err := c.svc.Family(ctx, tenant, t.ID)
	if err != nil {
		return ticketData{}, err
	}
	d := ticketData{
		Ticket: t, Moves: tickets.AllowedMoves(t.Status), Priorities: tickets.Priorities,
		Events: events.Events, Comments: comments.Comments,
		Edit: editForm{OperationID: newOperationID(), IfVersion: t.Version, Title: t.Title, Description: t.Description,
			Priority: string(t.Priority), Labels: strings.Join(t.Labels, ", "), LabelsBefore: t.Labels},
		Status:  statusForm{OperationID: newOperationID(), IfVersion: t.Version},
		Assign:  assignForm{OperationID: newOperationID(), IfVersion: t.Version, Assignee: t.Assignee},
		Comment: commentForm{OperationID: newOperationID()},
		Links:   linkViews(ticketLinks), LinkKinds: links.Kinds, People: people,
		Link:   linkForm{OperationID: newOperationID(), Kind: string(links.Blocks)},
		Parent: parent, Children: children,
	}
	base := "/console/tickets/" + url.PathEscape(t.Key)
	if events.NextCursor != "" {
		d.MoreHistory = base + "?" + url.Values{"history": {events.NextCursor}}.Encode() + "#history"
	}
	if comments.NextCursor != "" {
		d.MoreComments = base + "?" + url.Values{"comments": {comments.NextCursor}}.Encode() + "#comments"
	}
	return d, nil
}

// notices are the messages a successful POST's redirect asks for. Only these
// fixed texts can be shown, whatever the query string says.
var notices = map[string]string{
	"created":          "Ticket created.",
	"create-replayed":  "Already done: this form was submitted before and created the ticket shown. Nothing new was created.",
	"updated":          "Ticket updated.",
	"update-replayed":  "Already done: this form's change was applied before and was not applied again.",
	"unchanged":        "Nothing to change: the ticket already had those values.",
	"commented":        "Comment added.",
	"comment-replayed": "Already done: this comment was added before and was not added again.",
	"bulk-updated":     "The selected tickets were changed, as one operation.",
	"bulk-replayed":    "Already done: this change to the selected tickets was made before and was not made again.",
	"linked":           "Link added.",
	"unlinked":         "Link removed.",
	"link-replayed":    "Already done: this form's link change was made before and was not made again.",
	"link-unchanged":   "Nothing to change: the link already was as asked.",
}

func (c *console) ticketPage(w http.ResponseWriter, r *http.Request, req *request) {
	d, err := c.loadTicket(r, req, r.PathValue("ref"))
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	c.render(w, r, req, http.StatusOK, "ticket",
		layout{Title: d.Ticket.Key + " " + d.Ticket.Title, Nav: "/console/tickets", Notice: notices[r.URL.Query().Get("done")]}, d)
}

// newForm is the new-ticket form. Parent (a key or UUID, optional) makes
// the ticket a sub-task; a ticket page's "Add a sub-task" fills it in.
type newForm struct {
	OperationID, ProjectID, Title, Description, Priority, Labels, Parent string
}

type newData struct {
	Form       newForm
	Projects   []tickets.Project
	Priorities []tickets.Priority
}

func (c *console) newTicketPage(w http.ResponseWriter, r *http.Request, req *request) {
	q := r.URL.Query()
	c.renderNew(w, r, req, http.StatusOK, layout{}, newForm{
		OperationID: newOperationID(), ProjectID: q.Get("project"), Parent: q.Get("parent"), Priority: string(tickets.PriorityNormal),
	})
}

// renderNew shows the new-ticket form; l brings a failed submission's
// problem and pending approval.
func (c *console) renderNew(w http.ResponseWriter, r *http.Request, req *request, status int, l layout, f newForm) {
	projects, err := c.svc.ListProjects(r.Context(), req.principal.Tenant)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	l.Title, l.Nav = "New ticket", "/console/tickets/new"
	c.render(w, r, req, status, "new", l,
		newData{Form: f, Projects: projects, Priorities: tickets.Priorities})
}

func (c *console) projectsPage(w http.ResponseWriter, r *http.Request, req *request) {
	projects, err := c.svc.ListProjects(r.Context(), req.principal.Tenant)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	c.render(w, r, req, http.StatusOK, "projects", layout{Title: "Projects", Nav: "/console/projects"}, projects)
}
