package tracked

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// historyActor is the actor of ticketd's own reconciliation steps.
const historyActor = "ticketd"

// listSkew widens the list's "since" for clocks that disagree between
// ticketd and the tracker: since filters on the tracker's clock.
const listSkew = 5 * time.Minute

// downstreamRow is operation_downstream: what one operation asked of a
// tracker and what is known of it.
type downstreamRow struct {
	TenantID    string     `gorm:"column:tenant_id;primaryKey"`
	Action      string     `gorm:"column:action;primaryKey"`
	OperationID string     `gorm:"column:operation_id;primaryKey"`
	System      string     `gorm:"column:system"`
	ProjectID   string     `gorm:"column:project_id"`
	TicketID    string     `gorm:"column:ticket_id"`
	Request     string     `gorm:"column:request"`
	Status      string     `gorm:"column:status"`
	ExternalID  *string    `gorm:"column:external_id"`
	ExternalURL *string    `gorm:"column:external_url"`
	Attempts    int        `gorm:"column:attempts"`
	LastError   *string    `gorm:"column:last_error"`
	LastSentAt  *time.Time `gorm:"column:last_sent_at"`
	NextCheckAt *time.Time `gorm:"column:next_check_at"`
	LeasedUntil *time.Time `gorm:"column:leased_until"`
	Duplicates  string     `gorm:"column:duplicates"`
	CreatedAt   time.Time  `gorm:"column:created_at"`
	UpdatedAt   time.Time  `gorm:"column:updated_at"`
}

func (downstreamRow) TableName() string { return "operation_downstream" }

type historyRow struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	ID          string    `gorm:"column:id;primaryKey"`
	Action      string    `gorm:"column:action"`
	OperationID string    `gorm:"column:operation_id"`
	Kind        string    `gorm:"column:kind"`
	Actor       string    `gorm:"column:actor"`
	Detail      string    `gorm:"column:detail"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (historyRow) TableName() string { return "operation_history" }

func (r downstreamRow) duplicates() []tickets.Duplicate {
	var out []tickets.Duplicate
	_ = json.Unmarshal([]byte(r.Duplicates), &out) // written only by encodeDuplicates
	return out
}

func encodeDuplicates(d []tickets.Duplicate) string {
	if len(d) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(d) // plain strings and bools
	return string(b)
}

func (r downstreamRow) toDownstream() *tickets.Downstream {
	d := &tickets.Downstream{
		System: r.System, Status: r.Status, ExternalID: deref(r.ExternalID), ExternalURL: deref(r.ExternalURL),
		Attempts: r.Attempts, LastError: deref(r.LastError), Duplicates: r.duplicates(),
	}
	if r.NextCheckAt != nil {
		t := r.NextCheckAt.UTC()
		d.NextCheckAt = &t
	}
	return d
}

func keyWhere(key operations.Key) map[string]any {
	return map[string]any{"tenant_id": key.Tenant, "action": key.Action, "operation_id": key.OperationID.String()}
}

func nowUTC() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

func addHistory(tx *gorm.DB, key operations.Key, kind, actor, detail string) error {
	row := historyRow{
		TenantID: key.Tenant, ID: uuid.Must(uuid.NewV7()).String(), Action: key.Action, OperationID: key.OperationID.String(),
		Kind: kind, Actor: actor, Detail: detail, CreatedAt: nowUTC(),
	}
	if err := tx.Create(&row).Error; err != nil {
		return fmt.Errorf("%w: record operation history: %v", tickets.ErrUnavailable, err)
	}
	return nil
}

func (e *Engine) count(result string) {
	if e.opts.OnReconcile != nil {
		e.opts.OnReconcile(result)
	}
}

func (e *Engine) downstream(ctx context.Context, key operations.Key) (downstreamRow, error) {
	var row downstreamRow
	if err := e.m.DB().WithContext(ctx).Where(keyWhere(key)).Take(&row).Error; err != nil {
		return row, fmt.Errorf("read downstream of %s: %w", key, err)
	}
	return row, nil
}

// issueRef is an issue's tracker.Issue.Ref as a stored request holds it: a
// string, or the number an earlier ticketd stored for a GitHub issue.
type issueRef string

func (r *issueRef) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] != '"' {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("issue reference: %w", err)
		}
		*r = issueRef(n.String())
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("issue reference: %w", err)
	}
	*r = issueRef(s)
	return nil
}

// refOrder orders two references of one tracker as it numbered them: by
// length, then text ("9" before "10", "OPS-9" before "OPS-10").
func refOrder(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// Status adds to st what is known downstream, with the
// operation's reconciliation history; nothing for a local operation.
func (e *Engine) Status(ctx context.Context, st *tickets.OperationStatus) error {
	var rows []downstreamRow
	if err := e.m.DB().WithContext(ctx).Where(keyWhere(st.Record.Key)).Limit(1).Find(&rows).Error; err != nil {
		return fmt.Errorf("%w: read downstream: %v", tickets.ErrUnavailable, err)
	}
	if len(rows) == 0 {
		return nil
	}
	st.Downstream = rows[0].toDownstream()
	var hist []historyRow
	if err := e.m.DB().WithContext(ctx).Where(keyWhere(st.Record.Key)).Order("id").Limit(200).Find(&hist).Error; err != nil {
		return fmt.Errorf("%w: read operation history: %v", tickets.ErrUnavailable, err)
	}
	for _, h := range hist {
		st.History = append(st.History, tickets.HistoryEntry{Kind: h.Kind, Actor: h.Actor, Detail: h.Detail, At: h.CreatedAt.UTC()})
	}
	return nil
}
