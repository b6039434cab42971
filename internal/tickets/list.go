package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"
)

// Limits on search input.
const (
	MaxQuery      = 500 // characters
	MaxQueryWords = 16
)

// ListTicketsParams filters and pages ListTickets. All fields are optional;
// the filters combine (AND).
type ListTicketsParams struct {
	ProjectID string
	Status    Status
	// Query is full text over title and description: every word must occur
	// (whole words, any case).
	Query string
	// Assignee is an exact assignee; the transports resolve "me" to the
	// caller's subject before calling.
	Assignee string
	Label    string
	Priority Priority
	Limit    int    // 1..MaxLimit; 0 means DefaultLimit
	Cursor   string // from a previous page's NextCursor
}

// TicketPage is one page of tickets, newest first.
type TicketPage struct {
	Tickets    []Ticket
	NextCursor string // empty on the last page
}

type ticketPosition struct {
	ID string `json:"id"`
}

// ticketFilter is ListTicketsParams validated and normalised.
type ticketFilter struct {
	projectID, assignee, label string
	status                     Status
	priority                   Priority
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
	f.label = canonicalText(p.Label, true)
	f.status = Status(strings.ToLower(strings.TrimSpace(string(p.Status))))
	if f.status != "" && !slices.Contains(Statuses, f.status) {
		return f, invalidField("status", "must be one of open, in_progress, resolved, closed; got %q", p.Status)
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

// scope binds a cursor to the tenant and every filter.
func (f ticketFilter) scope(tenant string) string {
	return strings.Join(append([]string{"tickets", tenant, f.projectID, string(f.status), f.assignee, f.label,
		string(f.priority)}, f.words...), "\x00")
}

// apply adds the filter's conditions to q.
func (f ticketFilter) apply(q *gorm.DB, postgres bool) (*gorm.DB, error) {
	if f.projectID != "" {
		q = q.Where("project_id = ?", f.projectID)
	}
	if f.status != "" {
		q = q.Where("status = ?", string(f.status))
	}
	if f.assignee != "" {
		q = q.Where("assignee = ?", f.assignee)
	}
	if f.priority != "" {
		q = q.Where("priority = ?", string(f.priority))
	}
	if f.label != "" {
		if postgres {
			contains, err := json.Marshal([]string{f.label})
			if err != nil {
				return nil, fmt.Errorf("encode label filter: %w", err)
			}
			q = q.Where("labels::jsonb @> ?::jsonb", string(contains))
		} else {
			q = q.Where("EXISTS (SELECT 1 FROM json_each(tickets.labels) WHERE json_each.value = ?)", f.label)
		}
	}
	if len(f.words) > 0 {
		if postgres {
			// The words are letters and digits only: plainto_tsquery ANDs them.
			q = q.Where("search @@ plainto_tsquery('simple', ?)", strings.Join(f.words, " "))
		} else {
			quoted := make([]string, len(f.words))
			for i, w := range f.words {
				quoted[i] = `"` + w + `"` // FTS5 strings; implicit AND
			}
			q = q.Where("tickets.rowid IN (SELECT rowid FROM tickets_fts WHERE tickets_fts MATCH ?)", strings.Join(quoted, " "))
		}
	}
	return q, nil
}

// ListTickets returns the tenant's tickets, newest first, a page at a time;
// a page also ends early at MaxPageBytes. Cursors are bound to the tenant and
// the filters.
//
// Errors: ErrInvalid (bad filter, limit or cursor), ErrUnavailable.
func (s *Service) ListTickets(ctx context.Context, tenant string, p ListTicketsParams) (TicketPage, error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return TicketPage{}, err
	}
	f, err := normalizeFilter(p)
	if err != nil {
		return TicketPage{}, err
	}
	scope := f.scope(tenant)
	var start ticketPosition
	if p.Cursor != "" {
		if err := s.cursors.Decode(scope, p.Cursor, &start); err != nil {
			return TicketPage{}, invalidField("cursor", "not a cursor issued for this list; start again without one")
		}
	}
	base, err := f.apply(s.reads.WithContext(ctx).Select(ticketColumns).Where("tenant_id = ?", tenant), s.db.Dialector.Name() == "postgres")
	if err != nil {
		return TicketPage{}, err
	}
	fetch := func(after *ticketRow, n int) ([]ticketRow, error) {
		q := base.Session(&gorm.Session{})
		switch {
		case after != nil:
			q = q.Where("id < ?", after.ID)
		case start.ID != "":
			q = q.Where("id < ?", start.ID)
		}
		var rows []ticketRow
		// UUIDv7 ids sort in creation order, so id is the whole keyset.
		if err := q.Order("id DESC").Limit(n).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("%w: list tickets: %v", ErrUnavailable, err)
		}
		return rows, nil
	}
	items, last, more, err := fillPage(limit, fetch, ticketRow.toTicket)
	if err != nil {
		return TicketPage{}, err
	}
	page := TicketPage{Tickets: items}
	if more {
		if page.NextCursor, err = s.cursors.Encode(scope, ticketPosition{ID: last.ID}); err != nil {
			return TicketPage{}, err
		}
	}
	return page, nil
}
