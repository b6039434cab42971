package tickets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Tracker-backed projects (docs/contract.md#tracker-backed-projects). A
// create, an edit or a comment in such a project is a call to a tracker
// that has no idempotency key, so the ledger cannot make it happen once by
// holding one transaction. Instead:
//
//  1. the operation is claimed as pending and committed, with what to send
//     (operation_downstream) and a reconciliation job, before anything is sent;
//  2. every request that may reach the tracker is counted (attempts) and
//     committed before it leaves; a create or a comment carries the
//     operation's marker;
//  3. a definite answer settles the operation (succeeded, or failed for a
//     refusal that proves nothing happened); anything else is unknown;
//  4. before any second request, reconciliation looks at the tracker (the
//     marked issues, the marked comments, or the issue itself for
//     an edit) and, finding nothing, waits out the settle window since the
//     last request (which may still be in flight), looks again, and only
//     then sends once more;
//  5. a duplicate the tracker let through anyway is found by a later look,
//     the younger closed (an issue) or deleted (a comment), and recorded on
//     the operation: detected after the fact, never claimed impossible.
//
// The local ticket, event and comment rows mirror what was proven, written
// with the record's move to succeeded (and the webhook outbox), as a local
// write is. Only one worker at a time (a retry, the River job, an operator)
// works on an operation: it holds the row's lease, bounded so a crashed
// holder's lease runs out.
//
// Files: tracked_answer.go (claim and answers), tracked_reconcile.go (the
// round), tracked_create.go, tracked_comment.go and tracked_update.go (each
// action's look and send).

// TrackedOptions configures tracker-backed projects.
type TrackedOptions struct {
	// Open reaches a project's tracker (internal/tracker/github.Opener).
	Open tracker.Opener
	// Credentials are the tracker credentials the operator declared; a
	// backend must name one its tenant may use, at creation and at use.
	Credentials tracker.Credentials
	// Guard judges a backend's api_url at creation (the adapter judges
	// every connection with the same policy).
	Guard ssrf.Guard
	// Scheduler queues an operation's reconciliation in the claiming
	// transaction, so a crash after the claim is still settled; nil leaves
	// settling to retries and operators.
	Scheduler Scheduler
	// Settle is how long after a request that went unanswered ticketd waits
	// for it to land before sending again (TICKETD_RECONCILE_SETTLE, default 2m).
	Settle time.Duration
	// Lease bounds one reconciliation: how long it may hold an operation,
	// and so how long a crashed holder delays the next (default 1m). It must
	// exceed several tracker requests.
	Lease time.Duration
	// OnReconcile is told the result of each look at the tracker (one of
	// the Reconcile* constants), for metrics. Cheap and concurrency-safe.
	OnReconcile func(result string)
	// Concurrency bounds one tenant's tracker requests in flight at once
	// (TICKETD_TRACKER_CONCURRENCY); limits.DefaultOutsideConcurrency if
	// zero. A request waiting on a tracker holds no work slot
	// (limits.Outside), so a hanging tracker costs its own tenant only.
	Concurrency int

	outside *limits.Outside
}

func (o TrackedOptions) withDefaults() TrackedOptions {
	if o.Concurrency <= 0 {
		o.Concurrency = limits.DefaultOutsideConcurrency
	}
	o.outside, _ = limits.NewOutside(o.Concurrency) // cannot fail: Concurrency > 0
	if o.Settle <= 0 {
		o.Settle = 2 * time.Minute
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	return o
}

// Scheduler queues the reconciliation of an operation to run at a time,
// inside tx (internal/reconciler implements it with River).
type Scheduler interface {
	Schedule(tx *gorm.DB, key operations.Key, at time.Time) error
}

// The results of a reconciliation, as counted by OnReconcile.
const (
	// ReconcileFound: an earlier request's issue was found by its marker;
	// nothing was sent again.
	ReconcileFound = "found"
	// ReconcileWaiting: no issue found yet, inside the settle window.
	ReconcileWaiting = "waiting"
	// ReconcileResent: none found after the settle window; sent again.
	ReconcileResent = "resent"
	// ReconcileDuplicate: a duplicate was found and closed.
	ReconcileDuplicate = "duplicate"
	// ReconcileVerified: a duplicate check found exactly one issue.
	ReconcileVerified = "verified"
	// ReconcileHeld: an edit the issue does not show, on an issue changed
	// since it was sent: left to an operator rather than re-sent.
	ReconcileHeld = "held"
	// ReconcileError: the tracker could not be asked.
	ReconcileError = "error"
	// ReconcileResolved: an operator recorded a finding.
	ReconcileResolved = "resolved"
)

// ReconcileResults lists the results, for metrics that show all from the start.
func ReconcileResults() []string {
	return []string{ReconcileFound, ReconcileWaiting, ReconcileResent, ReconcileDuplicate, ReconcileVerified, ReconcileHeld, ReconcileError, ReconcileResolved}
}

// Downstream statuses (docs/contract.md#tracker-backed-projects).
const (
	DownstreamPending   = "pending"
	DownstreamSucceeded = "succeeded"
	DownstreamUnknown   = "unknown"
	DownstreamFailed    = "failed"
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

// Downstream is what get_operation_status shows of an operation's effect
// in a tracker.
type Downstream struct {
	System      string
	Status      string // DownstreamPending, …Succeeded, …Unknown or …Failed
	ExternalID  string
	ExternalURL string
	Attempts    int // requests that may have reached the tracker
	LastError   string
	NextCheckAt *time.Time
	Duplicates  []Duplicate
}

// Duplicate is a second issue filed for one operation, found after the fact.
type Duplicate struct {
	ExternalID  string `json:"external_id"`
	ExternalURL string `json:"external_url"`
	Closed      bool   `json:"closed"`
	KeptID      string `json:"kept_external_id"`
}

// HistoryEntry is one step in an operation's reconciliation: who did what,
// when, and why.
type HistoryEntry struct {
	Kind   string
	Actor  string
	Detail string
	At     time.Time
}

func (r downstreamRow) duplicates() []Duplicate {
	var out []Duplicate
	_ = json.Unmarshal([]byte(r.Duplicates), &out) // written only by encodeDuplicates
	return out
}

func encodeDuplicates(d []Duplicate) string {
	if len(d) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(d) // plain strings and bools
	return string(b)
}

func (r downstreamRow) toDownstream() *Downstream {
	d := &Downstream{
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
		return fmt.Errorf("%w: record operation history: %v", ErrUnavailable, err)
	}
	return nil
}

func (s *Service) count(result string) {
	if s.tracked.OnReconcile != nil {
		s.tracked.OnReconcile(result)
	}
}

// projectBackend returns the project's tracker backend, nil for a local
// project and for one that does not exist (the local path reports that).
func (s *Service) projectBackend(ctx context.Context, tenant, projectID string) (*tracker.Backend, error) {
	cacheKey := tenant + "\x00" + projectID
	if b, ok := s.backends.Load(cacheKey); ok {
		return b.(*tracker.Backend), nil
	}
	var row projectRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, projectID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("%w: look up project: %v", ErrUnavailable, err)
	}
	b := row.toProject().Backend
	s.backends.Store(cacheKey, b)
	return b, nil
}

func (s *Service) downstream(ctx context.Context, key operations.Key) (downstreamRow, error) {
	var row downstreamRow
	if err := s.db.WithContext(ctx).Where(keyWhere(key)).Take(&row).Error; err != nil {
		return row, fmt.Errorf("read downstream of %s: %w", key, err)
	}
	return row, nil
}

// ErrSettled: the operation was already settled (by another worker or an
// operator), so the finding was not recorded.
var ErrSettled = errors.New("operation already settled")

func externalID(repo string, n int64) string { return fmt.Sprintf("%s#%d", repo, n) }

func setExternal(tx *gorm.DB, tenant string, ticketID uuid.UUID, extID, extURL string) error {
	// UpdateColumns: mirroring the issue is not a change of the ticket, so
	// updated_at stays as the ticket's own writes left it.
	err := tx.Model(&ticketRow{}).Where("tenant_id = ? AND id = ?", tenant, ticketID.String()).
		UpdateColumns(map[string]any{"external_id": extID, "external_url": extURL}).Error
	if err != nil {
		return fmt.Errorf("%w: mirror issue on ticket: %v", ErrUnavailable, err)
	}
	return nil
}

// downstreamStatus adds to st what is known downstream, with the
// operation's reconciliation history; nothing for a local operation.
func (s *Service) downstreamStatus(ctx context.Context, st *OperationStatus) error {
	var rows []downstreamRow
	if err := s.db.WithContext(ctx).Where(keyWhere(st.Record.Key)).Limit(1).Find(&rows).Error; err != nil {
		return fmt.Errorf("%w: read downstream: %v", ErrUnavailable, err)
	}
	if len(rows) == 0 {
		return nil
	}
	st.Downstream = rows[0].toDownstream()
	var hist []historyRow
	if err := s.db.WithContext(ctx).Where(keyWhere(st.Record.Key)).Order("id").Limit(200).Find(&hist).Error; err != nil {
		return fmt.Errorf("%w: read operation history: %v", ErrUnavailable, err)
	}
	for _, h := range hist {
		st.History = append(st.History, HistoryEntry{Kind: h.Kind, Actor: h.Actor, Detail: h.Detail, At: h.CreatedAt.UTC()})
	}
	return nil
}
