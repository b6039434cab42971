package tickets

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Rows for GORM stay here, beside their queries; domain types carry no tags.

type projectRow struct {
	TenantID  string    `gorm:"column:tenant_id;primaryKey"`
	ID        string    `gorm:"column:id;primaryKey"`
	Key       string    `gorm:"column:key"`
	Name      string    `gorm:"column:name"`
	CreatedAt time.Time `gorm:"column:created_at"`
	// The tracker a tracker-backed project's tickets live in (docs/contract.md);
	// all nil for a local project.
	BackendKind       *string `gorm:"column:backend_kind"`
	BackendRepository *string `gorm:"column:backend_repository"`
	BackendAPIURL     *string `gorm:"column:backend_api_url"`
	// BackendCredential names a declared credential. A row stored before
	// credentials has none until MapRetiredTokenEnvs maps its retired
	// token_env (backend_token_env_retired, which is never read as a token).
	BackendCredential *string `gorm:"column:backend_credential"`
	// BackendOptions: a Jira backend's other members (tracker.Backend.Columns).
	BackendOptions *string `gorm:"column:backend_options"`
}

func (projectRow) TableName() string { return "projects" }

func (r projectRow) toProject() Project {
	p := Project{ID: r.ID, Key: r.Key, Name: r.Name, CreatedAt: r.CreatedAt.UTC()}
	if r.BackendKind != nil {
		b := tracker.FromColumns(*r.BackendKind, deref(r.BackendRepository), deref(r.BackendAPIURL), deref(r.BackendOptions),
			deref(r.BackendCredential), r.TenantID)
		p.Backend = &b
	}
	return p
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

type ticketRow struct {
	ID          string    `gorm:"column:id;primaryKey"`
	TenantID    string    `gorm:"column:tenant_id"`
	ProjectID   string    `gorm:"column:project_id"`
	Number      int64     `gorm:"column:number"`
	Key         string    `gorm:"column:key"`
	Title       string    `gorm:"column:title"`
	Description string    `gorm:"column:description"`
	Priority    string    `gorm:"column:priority"`
	Status      string    `gorm:"column:status"`
	Labels      string    `gorm:"column:labels"` // JSON array: one encoding for both dialects
	Reporter    string    `gorm:"column:reporter"`
	OperationID *string   `gorm:"column:operation_id"`
	Version     int64     `gorm:"column:version"`
	Assignee    *string   `gorm:"column:assignee"`
	ExternalID  *string   `gorm:"column:external_id"`
	ExternalURL *string   `gorm:"column:external_url"`
	CreatedAt   time.Time `gorm:"column:created_at"`
	UpdatedAt   time.Time `gorm:"column:updated_at"`
}

func (ticketRow) TableName() string { return "tickets" }

// ticketColumns are the columns ticketRow reads: never PostgreSQL's search
// vector, which can be as large as the description.
const ticketColumns = "id, tenant_id, project_id, number, key, title, description, priority, status, labels, " +
	"reporter, operation_id, version, assignee, external_id, external_url, created_at, updated_at"

// ticketResult reads a create_ticket record's ticket in the same query as
// the record on SQLite (operations.Join), into ticketRow.columns.
var ticketResult = operations.NewJoin("tickets", strings.Split(ticketColumns, ", "))

// columns returns scan targets for ticketColumns, in order.
func (r *ticketRow) columns() []any {
	return []any{&r.ID, &r.TenantID, &r.ProjectID, &r.Number, &r.Key, &r.Title, &r.Description, &r.Priority,
		&r.Status, &r.Labels, &r.Reporter, &r.OperationID, &r.Version, &r.Assignee, &r.ExternalID, &r.ExternalURL,
		&r.CreatedAt, &r.UpdatedAt}
}

// scanFirst scans the first of rows into dest and closes rows; found is
// false when there is none. Hot paths read their rows with it rather than
// GORM's Scan, which renders every statement with its arguments for a
// logger that discards it, a regular-expression pass per call (docs/perf.md).
func scanFirst(rows *sql.Rows, dest ...any) (found bool, err error) {
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	if !rows.Next() {
		return false, rows.Err()
	}
	return true, rows.Scan(dest...)
}

// rawFirst runs a raw statement and scans its first row into dest, as
// scanFirst does, with the error translated as GORM translates its own
// (gorm.ErrDuplicatedKey for a unique violation): raw statements skip that.
func rawFirst(tx *gorm.DB, query string, args map[string]any, dest ...any) (found bool, err error) {
	rows, err := tx.Raw(query, args).Rows()
	if err == nil {
		found, err = scanFirst(rows, dest...)
	}
	if t, ok := tx.Dialector.(gorm.ErrorTranslator); ok && err != nil {
		err = t.Translate(err)
	}
	return found, err
}

// rowScanner is what scanTicketRows reads: *sql.Rows, and pgx.Rows.
type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// listColumns are the columns of ticketColumns a list reads: what a Ticket
// and a list's cursor need, not the tenant the list is of, the number (the
// key carries it) or the operation that created the ticket, which cost a
// string each per row to scan for nothing. listSummaryColumns reads an
// empty description in the column's place, for a list whose caller sends
// summaries: a description can be 20,000 characters, stored out of line,
// and a summary has none.
const (
	listColumns        = listColumnsHead + "description" + listColumnsTail
	listSummaryColumns = listColumnsHead + "'' AS description" + listColumnsTail
	listColumnsHead    = "id, project_id, key, title, "
	listColumnsTail    = ", priority, status, labels, reporter, version, assignee, external_id, external_url, created_at, updated_at"
)

// listed returns scan targets for listColumns, in order.
func (r *ticketRow) listed() []any {
	return []any{&r.ID, &r.ProjectID, &r.Key, &r.Title, &r.Description, &r.Priority, &r.Status, &r.Labels, &r.Reporter,
		&r.Version, &r.Assignee, &r.ExternalID, &r.ExternalURL, &r.CreatedAt, &r.UpdatedAt}
}

// scanTicketRows reads every row of rows (listColumns, in order), by hand
// for the reason scanFirst gives; the caller closes rows.
func scanTicketRows(rows rowScanner, capacity int) ([]ticketRow, error) {
	out := make([]ticketRow, 0, capacity)
	for rows.Next() {
		// Scanned in place: a row scanned into a local escapes (columns
		// hands out pointers into it) and was then copied into out.
		out = append(out, ticketRow{})
		if err := rows.Scan(out[len(out)-1].listed()...); err != nil {
			return nil, err
		}
	}
	return out, rows.Err()
}

func (r ticketRow) toTicket() (Ticket, error) {
	id, err := uuid.Parse(r.ID)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket row %q: bad id: %w", r.ID, err)
	}
	labels, err := decodeLabels(r.Labels)
	if err != nil {
		return Ticket{}, fmt.Errorf("ticket row %s: bad labels: %w", r.ID, err)
	}
	assignee := ""
	if r.Assignee != nil {
		assignee = *r.Assignee
	}
	return Ticket{
		Version: r.Version, Assignee: assignee,
		ID: id, Key: r.Key, ProjectID: r.ProjectID, Title: r.Title, Description: r.Description,
		Priority: Priority(r.Priority), Status: Status(r.Status), Labels: labels, Reporter: r.Reporter,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		ExternalID: deref(r.ExternalID), ExternalURL: deref(r.ExternalURL),
	}, nil
}

// decodeLabels reads a labels column, the JSON array of strings ticketd
// writes, as json.Unmarshal reads it into a non-nil []string. An array as
// json.Marshal writes plain labels ([], ["a","b"]: no escapes) is sliced
// out of raw rather than decoded: json.Unmarshal's reflection and a copy of
// each label were a fifth of a list page's allocations (docs/perf.md).
// Anything else (an escape, a space, invalid UTF-8) goes to json.Unmarshal.
func decodeLabels(raw string) ([]string, error) {
	if labels, ok := plainLabels(raw); ok {
		return labels, nil
	}
	labels := []string{}
	if err := json.Unmarshal([]byte(raw), &labels); err != nil {
		return nil, err
	}
	return labels, nil
}

// plainLabels splits ["a","b"], written without spaces, escapes or control
// characters, into its valid UTF-8 strings; ok is false for anything else.
func plainLabels(raw string) (labels []string, ok bool) {
	inner, open := strings.CutPrefix(raw, "[")
	inner, closed := strings.CutSuffix(inner, "]")
	if !open || !closed {
		return nil, false
	}
	labels = make([]string, 0, strings.Count(inner, `"`)/2)
	for inner != "" {
		rest, quoted := strings.CutPrefix(inner, `"`)
		end := strings.IndexByte(rest, '"')
		if !quoted || end < 0 {
			return nil, false
		}
		label := rest[:end]
		if strings.ContainsFunc(label, func(r rune) bool { return r == '\\' || r < 0x20 || r == utf8.RuneError }) {
			return nil, false
		}
		labels, inner = append(labels, label), rest[end+1:]
		if inner != "" {
			var comma bool
			if inner, comma = strings.CutPrefix(inner, ","); !comma || inner == "" {
				return nil, false
			}
		}
	}
	return labels, true
}
