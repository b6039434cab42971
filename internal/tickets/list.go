package tickets

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits on search input.
const (
	MaxQuery      = 500 // characters
	MaxQueryWords = 16
)

// ListTicketsParams filters, sorts and pages ListTickets. All fields are
// optional; the filters combine (AND).
type ListTicketsParams struct {
	ProjectID string
	// Statuses keeps tickets in any of these statuses; empty keeps all.
	Statuses []Status
	// Query is full text over title and description: every word must occur
	// (whole words, any case).
	Query string
	// Assignee is an exact assignee, AssigneeNone for unassigned tickets,
	// or AssigneeMe for the caller's.
	Assignee string
	Label    string
	Priority Priority
	// Parent keeps the sub-tasks of this ticket (UUID or key).
	Parent string
	// UpdatedSince keeps tickets last changed at or after it.
	UpdatedSince *time.Time
	// Sort orders the list; "" is SortUpdatedDesc for a search (Query
	// given) and SortCreatedDesc otherwise.
	Sort   Sort
	Limit  int    // 1..MaxTicketLimit; 0 means DefaultTicketLimit
	Cursor string // from a previous page's NextCursor
	// MaxBytes bounds the page by Measure's sizes (a transport's own
	// budget, below MaxPageBytes); 0 means MaxPageBytes.
	MaxBytes int
	// Measure sizes a ticket as the transport will send it; nil measures
	// the whole ticket's JSON. It is called once per ticket, in page
	// order, and the page is a prefix of the tickets measured (the last
	// one measured may be left out for the budget), so a transport may
	// keep what it measured and send that.
	Measure func(Ticket) (int, error)
	// WithoutDescriptions leaves every ticket's Description empty, unread:
	// for a caller that sends summaries, a page of long tickets then costs
	// the database and the process what its summaries cost.
	WithoutDescriptions bool
}

// AssigneeNone is the assignee filter for unassigned tickets.
const AssigneeNone = "none"

// Page sizes of ticket lists (docs/contract.md#lists-and-the-context-budget): a default page an agent can
// afford to read on every turn.
const (
	DefaultTicketLimit = 20
	MaxTicketLimit     = 100
)

// Sort is the order of a ticket list; every order is newest first within
// equal keys.
type Sort string

// The orders.
const (
	SortUpdatedDesc  Sort = "updated_desc"
	SortCreatedDesc  Sort = "created_desc"
	SortPriorityDesc Sort = "priority_desc"
)

// Sorts lists every order.
var Sorts = []Sort{SortUpdatedDesc, SortCreatedDesc, SortPriorityDesc}

// TicketPage is one page of tickets, newest first.
type TicketPage struct {
	Tickets    []Ticket
	NextCursor string // empty on the last page
}

// ticketPosition is where a page ended, in the list's order: the id, plus
// the sort key the order compares first.
type ticketPosition struct {
	ID        string     `json:"id"`
	UpdatedAt *time.Time `json:"u,omitempty"`
	Rank      int        `json:"r,omitempty"`
}

// ticketFilter is ListTicketsParams validated and normalised.
type ticketFilter struct {
	projectID, assignee, label string
	parent                     string // the parent's UUID
	unassigned                 bool
	statuses                   []Status
	priority                   Priority
	updatedSince               *time.Time
	sort                       Sort
	words                      []string
}

func normalizeFilter(p ListTicketsParams) (ticketFilter, error) {
	var f ticketFilter
	for field, v := range map[string]string{"project_id": p.ProjectID, "assignee": p.Assignee, "label": p.Label, "query": p.Query} {
		if msg := checkText(v); msg != "" {
			return f, invalidField(field, "%s", msg)
		}
	}
	f.projectID = canonicalText(p.ProjectID, true)
	f.assignee = canonicalText(p.Assignee, false)
	if f.assignee == AssigneeNone {
		f.assignee, f.unassigned = "", true
	}
	f.label = canonicalText(p.Label, true)
	for _, raw := range p.Statuses {
		st := Status(strings.ToLower(strings.TrimSpace(string(raw))))
		if !slices.Contains(Statuses, st) {
			return f, invalidField("status", "must be one of open, in_progress, resolved, closed; got %q", raw)
		}
		if !slices.Contains(f.statuses, st) {
			f.statuses = append(f.statuses, st)
		}
	}
	// One order for one set, so a cursor does not depend on how the caller
	// spelled the list.
	slices.Sort(f.statuses)
	if p.UpdatedSince != nil {
		t := p.UpdatedSince.UTC()
		f.updatedSince = &t
	}
	f.priority = Priority(strings.ToLower(strings.TrimSpace(string(p.Priority))))
	if f.priority != "" && !slices.Contains(Priorities, f.priority) {
		return f, invalidField("priority", "must be one of low, normal, high, urgent; got %q", p.Priority)
	}
	if q := canonicalText(p.Query, false); q != "" {
		if n := utf8.RuneCountInString(q); n > MaxQuery {
			return f, invalidField("query", "must be at most %d characters, got %d", MaxQuery, n)
		}
		f.words = searchWords(q)
		switch {
		case len(f.words) == 0:
			return f, invalidField("query", "has no words to search for (letters or digits)")
		case len(f.words) > MaxQueryWords:
			return f, invalidField("query", "at most %d words, got %d", MaxQueryWords, len(f.words))
		}
	}
	f.sort = Sort(strings.ToLower(strings.TrimSpace(string(p.Sort))))
	switch {
	case f.sort == "" && len(f.words) > 0:
		f.sort = SortUpdatedDesc
	case f.sort == "":
		f.sort = SortCreatedDesc
	case !slices.Contains(Sorts, f.sort):
		return f, invalidField("sort", "must be one of updated_desc, created_desc, priority_desc; got %q", p.Sort)
	}
	return f, nil
}

// searchWords splits a query into the words both engines index: runs of
// letters and digits, lower-cased, distinct. Everything else separates
// words, so no query syntax of either engine ever reaches it.
func searchWords(q string) []string {
	words := strings.FieldsFunc(strings.ToLower(q), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	slices.Sort(words)
	return slices.Compact(words)
}

// scope binds a cursor to the tenant, every filter and the order.
func (f ticketFilter) scope(tenant string) string {
	statuses := make([]string, len(f.statuses))
	for i, st := range f.statuses {
		statuses[i] = string(st)
	}
	since := ""
	if f.updatedSince != nil {
		since = f.updatedSince.Format(time.RFC3339Nano)
	}
	return strings.Join(append([]string{"tickets", tenant, f.projectID, strings.Join(statuses, ","), f.assignee,
		fmt.Sprint(f.unassigned), f.label, string(f.priority), since, string(f.sort), f.parent}, f.words...), "\x00")
}

// ListTickets returns the tenant's tickets in the order p.Sort names, a
// page at a time; a page also ends early at p.MaxBytes (MaxPageBytes if
// unset). Cursors are bound to the tenant, the filters and the order.
//
// Errors: ErrInvalid (bad filter, sort, limit or cursor), ErrUnavailable.
func (s *Service) ListTickets(ctx context.Context, c Caller, p ListTicketsParams) (TicketPage, error) {
	tenant := c.Tenant
	if p.Assignee == AssigneeMe {
		p.Assignee = c.Subject
	}
	limit, err := ticketPageLimit(p.Limit)
	if err != nil {
		return TicketPage{}, err
	}
	f, err := normalizeFilter(p)
	if err != nil {
		return TicketPage{}, err
	}
	if p.Parent != "" {
		if f.parent, err = s.parentID(ctx, tenant, p.Parent); err != nil {
			return TicketPage{}, err
		}
	}
	scope := f.scope(tenant)
	var start *ticketPosition
	if p.Cursor != "" {
		start = new(ticketPosition)
		if err := s.cursors.Decode(scope, p.Cursor, start); err != nil {
			return TicketPage{}, invalidField("cursor", "not a cursor issued for this list; start again without one")
		}
	}
	columns := listColumns
	if p.WithoutDescriptions {
		columns = listSummaryColumns
	}
	lister, err := newTicketLister(s.reads, s.db.Dialector.Name() == "postgres", tenant, columns, f)
	if err != nil {
		return TicketPage{}, err
	}
	fetch := func(after *ticketRow, n int) ([]ticketRow, error) {
		pos := start
		if after != nil {
			at := f.position(*after)
			pos = &at
		}
		return lister.fetch(ctx, pos, n)
	}
	maxBytes, measure := cmp.Or(p.MaxBytes, MaxPageBytes), p.Measure
	if measure == nil {
		measure = measureJSON[Ticket]
	}
	items, last, more, err := fillPageWithin(limit, min(maxBytes, MaxPageBytes), measure, fetch, ticketRow.toTicket)
	if err != nil {
		return TicketPage{}, err
	}
	page := TicketPage{Tickets: items}
	if more {
		if page.NextCursor, err = s.cursors.Encode(scope, f.position(*last)); err != nil {
			return TicketPage{}, err
		}
	}
	return page, nil
}

func ticketPageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultTicketLimit, nil
	case limit < 0 || limit > MaxTicketLimit:
		return 0, invalidField("limit", "must be between 1 and %d, got %d", MaxTicketLimit, limit)
	}
	return limit, nil
}
