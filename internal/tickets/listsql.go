package tickets

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
)

// listStatement is a list's SELECT being written by hand for one dialect:
// PostgreSQL's runs through db.Query with numbered placeholders, SQLite's
// through GORM with ?. Written once per page rather than built by GORM for
// every batch (docs/perf.md).
type listStatement struct {
	numbered bool
	sql      strings.Builder
	args     []any
}

// arg adds v to the statement's arguments and returns its placeholder.
func (st *listStatement) arg(v any) string {
	st.args = append(st.args, v)
	if st.numbered {
		return "$" + strconv.Itoa(len(st.args))
	}
	return "?"
}

// and adds a condition to the WHERE clause.
func (st *listStatement) and(condition string) {
	st.sql.WriteString(" AND ")
	st.sql.WriteString(condition)
}

// priorityRank orders priorities for SortPriorityDesc, in SQL both
// dialects run.
const priorityRank = "(CASE priority WHEN 'urgent' THEN 4 WHEN 'high' THEN 3 WHEN 'normal' THEN 2 ELSE 1 END)"

// rankOf is priorityRank in Go, for the cursor.
func rankOf(p string) int {
	switch Priority(p) {
	case PriorityUrgent:
		return 4
	case PriorityHigh:
		return 3
	case PriorityNormal:
		return 2
	}
	return 1
}

// order returns the ORDER BY of the filter's sort.
func (f ticketFilter) order() string {
	switch f.sort {
	case SortUpdatedDesc:
		return "updated_at DESC, id DESC"
	case SortPriorityDesc:
		return priorityRank + " DESC, id DESC"
	}
	// UUIDv7 ids sort in creation order, so id is the whole keyset.
	return "id DESC"
}

// walksAnIndex reports whether the list is best read by walking one index
// in its order, however the rows are spread, so that db.Query may keep the
// planner to that walk (Statement.InIndexOrder), with statistics or without.
// It is so when one index holds every filter but the statuses and provides
// the order: tickets_pkey, or one filter's index ending in id
// (tickets_tenant_project_id_desc, _assignee_, _unassigned_, _priority_),
// for the newest first; tickets_tenant_updated_desc, with updated_since
// its range, for the last updated. The walk reads rows until it has a
// page in the statuses asked for, never more than a sort would read from
// the same index. With a second indexed filter, updated_since on the
// newest first, the parent, words or a label, another index may find the
// few rows that match, and the planner is left to choose.
func (f ticketFilter) walksAnIndex() bool {
	if len(f.words) > 0 || f.label != "" || f.parent != "" {
		return false
	}
	indexed := 0
	for _, filtered := range []bool{f.projectID != "", f.assignee != "", f.unassigned, f.priority != ""} {
		if filtered {
			indexed++
		}
	}
	switch f.sort {
	case SortCreatedDesc:
		return indexed <= 1 && f.updatedSince == nil
	case SortUpdatedDesc:
		return indexed == 0
	}
	return false
}

// after limits the statement to the rows after pos in the filter's order,
// as one comparison of row values: for the last updated first it is a
// range of tickets_tenant_updated_desc, where updated_at < $1 OR
// (updated_at = $1 AND id < $2) was a filter the walk applied to every
// row before the cursor, so page n read n pages (docs/perf.md).
func (f ticketFilter) after(st *listStatement, pos ticketPosition) {
	switch {
	case f.sort == SortUpdatedDesc && pos.UpdatedAt != nil:
		st.and("(updated_at, id) < (" + st.arg(*pos.UpdatedAt) + ", " + st.arg(pos.ID) + ")")
	case f.sort == SortPriorityDesc:
		st.and("(" + priorityRank + ", id) < (" + st.arg(pos.Rank) + ", " + st.arg(pos.ID) + ")")
	default:
		st.and("id < " + st.arg(pos.ID))
	}
}

// position is where a page that ends with r ends, in the filter's order.
func (f ticketFilter) position(r ticketRow) ticketPosition {
	pos := ticketPosition{ID: r.ID}
	switch f.sort {
	case SortUpdatedDesc:
		t := r.UpdatedAt.UTC()
		pos.UpdatedAt = &t
	case SortPriorityDesc:
		pos.Rank = rankOf(r.Priority)
	}
	return pos
}

// where writes the statement's WHERE clause: the tenant, then every filter.
func (f ticketFilter) where(st *listStatement, tenant string, postgres bool) error {
	st.sql.WriteString(" WHERE tenant_id = " + st.arg(tenant))
	if f.projectID != "" {
		st.and("project_id = " + st.arg(f.projectID))
	}
	if f.parent != "" {
		st.and("parent_id = " + st.arg(f.parent))
	}
	if len(f.statuses) > 0 {
		marks := make([]string, len(f.statuses))
		for i, status := range f.statuses {
			marks[i] = st.arg(string(status))
		}
		st.and("status IN (" + strings.Join(marks, ", ") + ")")
	}
	switch {
	case f.unassigned:
		st.and("assignee IS NULL")
	case f.assignee != "":
		st.and("assignee = " + st.arg(f.assignee))
	}
	if f.updatedSince != nil {
		st.and("updated_at >= " + st.arg(*f.updatedSince))
	}
	if f.priority != "" {
		st.and("priority = " + st.arg(string(f.priority)))
	}
	if f.label != "" {
		if postgres {
			contains, err := json.Marshal([]string{f.label})
			if err != nil {
				return fmt.Errorf("encode label filter: %w", err)
			}
			st.and("labels::jsonb @> " + st.arg(string(contains)) + "::jsonb")
		} else {
			st.and("EXISTS (SELECT 1 FROM json_each(tickets.labels) WHERE json_each.value = " + st.arg(f.label) + ")")
		}
	}
	if len(f.words) > 0 {
		if postgres {
			// The words are letters and digits only: plainto_tsquery ANDs them.
			st.and("search @@ plainto_tsquery('simple', " + st.arg(strings.Join(f.words, " ")) + ")")
		} else {
			quoted := make([]string, len(f.words))
			for i, w := range f.words {
				quoted[i] = `"` + w + `"` // FTS5 strings; implicit AND
			}
			st.and("tickets.rowid IN (SELECT rowid FROM tickets_fts WHERE tickets_fts MATCH " + st.arg(strings.Join(quoted, " ")) + ")")
		}
	}
	return nil
}

// ticketLister reads a list's batches: its statement's SELECT and WHERE,
// written once, then each batch's position, order and limit.
type ticketLister struct {
	reads    *gorm.DB
	postgres bool
	filter   ticketFilter
	selected string // SELECT … WHERE …
	args     []any  // the WHERE clause's
}

// newTicketLister writes the list's SELECT of columns (listColumns or
// listSummaryColumns) and its WHERE.
func newTicketLister(reads *gorm.DB, postgres bool, tenant, columns string, f ticketFilter) (ticketLister, error) {
	st := &listStatement{numbered: postgres}
	st.sql.WriteString("SELECT " + columns + " FROM tickets")
	if err := f.where(st, tenant, postgres); err != nil {
		return ticketLister{}, err
	}
	return ticketLister{reads: reads, postgres: postgres, filter: f, selected: st.sql.String(), args: st.args}, nil
}

// fetch reads up to n rows after pos (from the list's start when nil).
func (l ticketLister) fetch(ctx context.Context, pos *ticketPosition, n int) ([]ticketRow, error) {
	st := &listStatement{numbered: l.postgres, args: slices.Clip(l.args)}
	st.sql.WriteString(l.selected)
	if pos != nil {
		l.filter.after(st, *pos)
	}
	st.sql.WriteString(" ORDER BY " + l.filter.order() + " LIMIT " + st.arg(n))
	var page []ticketRow
	var err error
	if l.postgres {
		err = db.Query(ctx, l.reads, db.Statement{SQL: st.sql.String(), Args: st.args, Table: "tickets", InIndexOrder: l.filter.walksAnIndex()},
			func(rows pgx.Rows) (err error) {
				page, err = scanTicketRows(rows, n)
				return err
			})
	} else {
		page, err = l.fetchSQLite(ctx, st, n)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: list tickets: %v", ErrUnavailable, err)
	}
	return page, nil
}

func (l ticketLister) fetchSQLite(ctx context.Context, st *listStatement, n int) (page []ticketRow, err error) {
	rows, err := l.reads.WithContext(ctx).Table("tickets").Raw(st.sql.String(), st.args...).Rows()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	return scanTicketRows(rows, n)
}
