package tickets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Tracker-backed projects (docs/contract.md#tracker-backed-projects). A create in such a project is a
// call to a tracker that has no idempotency key, so the ledger cannot make
// it happen once by holding one transaction. Instead:
//
//  1. the operation is claimed as pending and committed, with what to send
//     (operation_downstream) and a reconciliation job, before anything is sent;
//  2. every request that may reach the tracker is counted (attempts) and
//     committed before it leaves, and carries the operation's marker;
//  3. a definite answer settles the operation (succeeded, or failed for a
//     refusal that proves nothing was created); anything else is unknown;
//  4. before any second request, reconciliation lists the repository's
//     marked issues and, finding none, waits out the settle window since the
//     last request (which may still be in flight), looks again, and only then
//     sends once more with the same marker;
//  5. a duplicate the tracker let through anyway is found by a later look,
//     the younger closed with a comment, and recorded on the operation:
//     detected after the fact, never claimed impossible.
//
// Only one worker at a time (a retry, the River job, an operator) works on
// an operation: it holds the row's lease, bounded so a crashed holder's
// lease runs out.

// TrackedOptions configures tracker-backed projects.
type TrackedOptions struct {
	// Open reaches a project's tracker (internal/tracker/github.Opener).
	Open tracker.Opener
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
}

func (o TrackedOptions) withDefaults() TrackedOptions {
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
	// ReconcileError: the tracker could not be asked.
	ReconcileError = "error"
	// ReconcileResolved: an operator recorded a finding.
	ReconcileResolved = "resolved"
)

// ReconcileResults lists the results, for metrics that show all from the start.
func ReconcileResults() []string {
	return []string{ReconcileFound, ReconcileWaiting, ReconcileResent, ReconcileDuplicate, ReconcileVerified, ReconcileError, ReconcileResolved}
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

// trackedRequest is what a tracker-backed create sends, kept so any
// replica can send it again.
type trackedRequest struct {
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    Priority `json:"priority"`
	Labels      []string `json:"labels"`
	Reporter    string   `json:"reporter"`
}

func (r trackedRequest) ticket() NewTicket {
	return NewTicket{ProjectID: r.ProjectID, Title: r.Title, Description: r.Description, Priority: r.Priority, Labels: r.Labels}
}

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

// createTracked is CreateTicket in a tracker-backed project.
func (s *Service) createTracked(ctx context.Context, tenant, reporter string, id uuid.UUID, n NewTicket) (CreateResult, error) {
	key := operations.Key{Tenant: tenant, Action: ActionCreateTicket, OperationID: id}
	fp := Fingerprint(n)
	res := CreateResult{OperationID: id}
	rec, err := s.ledger.Lookup(ctx, key)
	switch {
	case err == nil:
		return s.answerTracked(ctx, key, rec, fp)
	case !errors.Is(err, operations.ErrNotFound):
		return res, fmt.Errorf("create ticket: %w", err)
	}
	ticketID := uuid.Must(uuid.NewV7())
	raw, err := json.Marshal(trackedRequest{ProjectID: n.ProjectID, Title: n.Title, Description: n.Description,
		Priority: n.Priority, Labels: n.Labels, Reporter: reporter})
	if err != nil {
		return res, fmt.Errorf("create ticket: encode request: %w", err)
	}
	out, err := s.ledger.Claim(ctx, key, fp, ticketID.String(), func(tx *gorm.DB) error {
		now := nowUTC()
		first := now.Add(s.tracked.Settle)
		row := downstreamRow{
			TenantID: tenant, Action: key.Action, OperationID: id.String(), System: tracker.KindGitHub,
			ProjectID: n.ProjectID, TicketID: ticketID.String(), Request: string(raw), Status: DownstreamPending,
			NextCheckAt: &first, Duplicates: "[]", CreatedAt: now, UpdatedAt: now,
		}
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("%w: claim downstream: %v", ErrUnavailable, err)
		}
		if err := addHistory(tx, key, "claimed", reporter, "claimed as pending before anything is sent to the tracker"); err != nil {
			return err
		}
		if s.tracked.Scheduler == nil {
			return nil
		}
		if err := s.tracked.Scheduler.Schedule(tx, key, first); err != nil {
			return fmt.Errorf("%w: schedule reconciliation: %v", ErrUnavailable, err)
		}
		return nil
	})
	if err != nil {
		if r := out.Record; r.Fingerprint != "" && (r.Status == operations.StatusPending || r.Status == operations.StatusUnknown || r.Status == operations.StatusSucceeded) {
			// A concurrent call claimed the key first.
			return s.answerTracked(ctx, key, r, fp)
		}
		return res, fmt.Errorf("create ticket: %w", err)
	}
	if _, err := s.reconcile(ctx, key, false); err != nil {
		// Claimed, and the request may be out: never a failure.
		return res, fmt.Errorf("create ticket: %w: %v", operations.ErrOutcomeUnknown, err)
	}
	return s.answerRecorded(ctx, key, false)
}

// answerTracked answers a create whose key already has a record: replays
// a success, reports a failure, and reconciles a pending or unknown one
// before answering what it can prove.
func (s *Service) answerTracked(ctx context.Context, key operations.Key, rec operations.Record, fp string) (CreateResult, error) {
	res := CreateResult{OperationID: key.OperationID}
	if rec.Fingerprint != fp || rec.Status == operations.StatusFailed {
		_, err := operations.Answer(rec, fp)
		return res, fmt.Errorf("create ticket: %w", err)
	}
	if rec.Status == operations.StatusPending || rec.Status == operations.StatusUnknown {
		busy, err := s.reconcile(ctx, key, false)
		if err != nil {
			return res, fmt.Errorf("create ticket: %w: %v", operations.ErrOutcomeUnknown, err)
		}
		if busy {
			return res, fmt.Errorf("create ticket: %w: another call is reconciling this operation with the tracker", operations.ErrInProgress)
		}
	}
	return s.answerRecorded(ctx, key, true)
}

// answerRecorded answers from the record as it now stands.
func (s *Service) answerRecorded(ctx context.Context, key operations.Key, replayed bool) (CreateResult, error) {
	res := CreateResult{OperationID: key.OperationID}
	rec, err := s.ledger.Lookup(ctx, key)
	if err != nil {
		return res, fmt.Errorf("create ticket: %w: %v", operations.ErrOutcomeUnknown, err)
	}
	switch rec.Status {
	case operations.StatusSucceeded:
		t, err := s.ticketByID(ctx, key.Tenant, rec.ResultID)
		if err != nil {
			return res, fmt.Errorf("create ticket: read created ticket: %w", err)
		}
		res.Ticket, res.Replayed = t, replayed
		return res, nil
	case operations.StatusFailed:
		return res, fmt.Errorf("create ticket: %w (key %s): %s", operations.ErrFailed, key, rec.Error)
	}
	d, err := s.downstream(ctx, key)
	if err != nil {
		return res, fmt.Errorf("create ticket: %w: %v", operations.ErrOutcomeUnknown, err)
	}
	next := "soon"
	if d.NextCheckAt != nil {
		next = d.NextCheckAt.UTC().Format(time.RFC3339)
	}
	if rec.Status == operations.StatusUnknown {
		return res, fmt.Errorf("create ticket: %w (key %s): the tracker gave no definite answer (%s); ticketd reconciles before it sends again, next check %s",
			operations.ErrOutcomeUnknown, key, deref(d.LastError), next)
	}
	why := ""
	if d.LastError != nil {
		why = " (" + *d.LastError + ")"
	}
	return res, fmt.Errorf("create ticket: %w (key %s): the tracker has not confirmed the issue yet%s; next check %s",
		operations.ErrInProgress, key, why, next)
}

func (s *Service) downstream(ctx context.Context, key operations.Key) (downstreamRow, error) {
	var row downstreamRow
	if err := s.db.WithContext(ctx).Where(keyWhere(key)).Take(&row).Error; err != nil {
		return row, fmt.Errorf("read downstream of %s: %w", key, err)
	}
	return row, nil
}

// lease takes key's downstream row for one reconciliation. It reports
// busy when another worker holds it, and ok false when there is nothing to
// do (settled, with no duplicate check due, unless force).
func (s *Service) lease(ctx context.Context, key operations.Key, force bool) (row downstreamRow, ok, busy bool, err error) {
	now := time.Now().UTC()
	q := s.db.WithContext(ctx).Model(&downstreamRow{}).Where(keyWhere(key)).
		Where("(leased_until IS NULL OR leased_until < ?)", now)
	if force {
		q = q.Where("status <> ?", DownstreamFailed)
	} else {
		q = q.Where("(status IN ? OR next_check_at IS NOT NULL)", []string{DownstreamPending, DownstreamUnknown})
	}
	res := q.Updates(map[string]any{"leased_until": now.Add(s.tracked.Lease)})
	if res.Error != nil {
		return row, false, false, fmt.Errorf("%w: lease operation %s: %v", ErrUnavailable, key, res.Error)
	}
	if row, err = s.downstream(ctx, key); err != nil {
		return row, false, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if res.RowsAffected == 1 {
		return row, true, false, nil
	}
	held := row.LeasedUntil != nil && row.LeasedUntil.After(now)
	return row, false, held && (row.Status == DownstreamPending || row.Status == DownstreamUnknown), nil
}

// reconcile does one round of work on key under its lease: look, settle,
// wait, or send. It reports busy when another worker holds the operation.
func (s *Service) reconcile(ctx context.Context, key operations.Key, force bool) (busy bool, err error) {
	row, ok, busy, err := s.lease(ctx, key, force)
	if err != nil || !ok {
		return busy, err
	}
	// Every tracker call starts before the lease ends and is bounded by
	// the tracker's own timeout, so no second worker can overlap this one.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.tracked.Lease*3/4)
	defer cancel()
	return false, s.work(wctx, key, row)
}

func (s *Service) work(ctx context.Context, key operations.Key, row downstreamRow) error {
	b, err := s.projectBackend(ctx, key.Tenant, row.ProjectID)
	if err != nil {
		return s.release(ctx, key, row, err)
	}
	if b == nil {
		return s.release(ctx, key, row, fmt.Errorf("project %s has no tracker backend", row.ProjectID))
	}
	t, err := s.tracked.Open(*b)
	if err != nil {
		return s.release(ctx, key, row, err)
	}
	marker := tracker.Marker(key.Tenant, key.OperationID.String())
	now := time.Now().UTC()
	if row.Attempts == 0 && row.LastError != nil && row.NextCheckAt != nil && now.Before(*row.NextCheckAt) {
		// Refused earlier (a rate limit): nothing was created, and the
		// tracker asked to wait until then.
		return s.release(ctx, key, row, nil)
	}
	// A settled operation is only ever looked at (a duplicate check), even
	// one an operator resolved before any request was counted.
	if row.Attempts > 0 || row.Status == DownstreamSucceeded {
		issues, err := t.ListLabelled(ctx, tracker.Label, row.CreatedAt.Add(-listSkew))
		if err != nil {
			s.count(ReconcileError)
			return s.release(ctx, key, row, fmt.Errorf("list marked issues: %w", err))
		}
		var marked []tracker.Issue
		for _, i := range issues {
			if strings.Contains(i.Body, marker) {
				marked = append(marked, i)
			}
		}
		slices.SortStableFunc(marked, func(a, b tracker.Issue) int {
			if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
				return c
			}
			return int(a.Number - b.Number)
		})
		if len(marked) > 0 {
			return s.settleFound(ctx, key, row, t, b.Repository, marked)
		}
		if row.Status == DownstreamSucceeded {
			// A duplicate check that sees not even the recorded issue: the
			// list lags; look again later.
			return s.checkAgain(ctx, key, row, "the list does not show the issue yet")
		}
		if settled := row.LastSentAt.Add(s.tracked.Settle); now.Before(settled) {
			s.count(ReconcileWaiting)
			return s.wait(ctx, key, row, settled)
		}
		s.count(ReconcileResent)
	}
	return s.send(ctx, key, row, t, b.Repository, marker)
}

// detach is the context for bookkeeping after a request left: it runs
// even when the caller has gone, so a sent request is never unrecorded.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
}

// release gives the lease back, recording why this round did nothing.
func (s *Service) release(ctx context.Context, key operations.Key, row downstreamRow, cause error) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	updates := map[string]any{"leased_until": nil, "updated_at": nowUTC()}
	if cause != nil {
		updates["last_error"] = cause.Error()
		if row.NextCheckAt == nil || row.NextCheckAt.Before(time.Now()) {
			updates["next_check_at"] = nowUTC().Add(s.tracked.Settle)
		}
	}
	return s.db.WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(updates).Error; err != nil {
			return fmt.Errorf("%w: release operation %s: %v", ErrUnavailable, key, err)
		}
		if cause == nil {
			return nil
		}
		return addHistory(tx, key, "error", historyActor, cause.Error())
	})
}

// wait records that nothing was found inside the settle window.
func (s *Service) wait(ctx context.Context, key operations.Key, row downstreamRow, until time.Time) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	return s.db.WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"leased_until": nil, "next_check_at": until, "updated_at": nowUTC()}).Error
		if err != nil {
			return fmt.Errorf("%w: record look: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, "looked", historyActor, fmt.Sprintf(
			"no marked issue yet; the last request (%s) may still land: no new request before %s",
			row.LastSentAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)))
	})
}

// send makes one request, counted and committed before it leaves.
func (s *Service) send(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, repo, marker string) error {
	var req trackedRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	sentAt := nowUTC()
	attempt := row.Attempts + 1
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"attempts": attempt, "last_sent_at": sentAt, "updated_at": sentAt}).Error
		if err != nil {
			return fmt.Errorf("%w: count attempt: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, "sent", historyActor, fmt.Sprintf("attempt %d: create issue in %s with the operation's marker", attempt, repo))
	})
	if err != nil {
		_ = s.release(ctx, key, row, nil)
		return err
	}
	body := req.Description
	if body != "" {
		body += "\n\n"
	}
	body += marker
	labels := append([]string{tracker.Label}, req.Labels...)
	issue, sendErr := t.CreateIssue(ctx, tracker.NewIssue{Title: req.Title, Body: body, Labels: labels})
	row.Attempts, row.LastSentAt = attempt, &sentAt
	rctx, cancel := detach(ctx)
	defer cancel()
	var limited *tracker.RateLimitError
	switch {
	case sendErr == nil:
		return s.succeed(rctx, key, row, issue, repo, nil, "created", historyActor, "")
	case errors.As(sendErr, &limited), errors.Is(sendErr, tracker.ErrNotSent), errors.Is(sendErr, tracker.ErrMisconfigured):
		// Nothing was created: take the attempt back, so the next round may
		// send without waiting for a request that never was.
		wait := s.tracked.Settle
		if limited != nil {
			wait = limited.RetryAfter
		}
		return s.refused(rctx, key, attempt-1, sentAt.Add(wait), sendErr)
	case errors.Is(sendErr, tracker.ErrRejected) && attempt == 1:
		return s.fail(rctx, key, sendErr.Error(), "rejected", historyActor)
	}
	// Sent, no definite answer (a timeout, a dropped connection, a 5xx; or
	// a refusal of a re-send, which proves nothing about the first request).
	return s.markUnknown(rctx, key, sentAt.Add(s.tracked.Settle), sendErr)
}

func (s *Service) refused(ctx context.Context, key operations.Key, attempts int, next time.Time, cause error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		updates := map[string]any{"attempts": attempts, "last_error": cause.Error(), "next_check_at": next,
			"leased_until": nil, "updated_at": nowUTC()}
		if attempts == 0 {
			updates["last_sent_at"] = nil
		}
		if err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(updates).Error; err != nil {
			return fmt.Errorf("%w: record refusal: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, "not_sent", historyActor, fmt.Sprintf("nothing created (%v); next try at %s", cause, next.UTC().Format(time.RFC3339)))
	})
}

func (s *Service) markUnknown(ctx context.Context, key operations.Key, next time.Time, cause error) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := operations.Settle(tx, key, operations.StatusUnknown, "", ""); err != nil {
			return err
		}
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": DownstreamUnknown, "last_error": cause.Error(), "next_check_at": next, "leased_until": nil, "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record unknown: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, "no_answer", historyActor, fmt.Sprintf("no definite answer (%v): the issue may exist; reconciling at %s before any new request",
			cause, next.UTC().Format(time.RFC3339)))
	})
}

func (s *Service) fail(ctx context.Context, key operations.Key, reason, kind, actor string) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ok, err := operations.Settle(tx, key, operations.StatusFailed, "", reason)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: operation %s is already settled", ErrSettled, key)
		}
		err = tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": DownstreamFailed, "last_error": reason, "next_check_at": nil, "leased_until": nil, "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record failure: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, kind, actor, reason)
	})
}

// ErrSettled: the operation was already settled (by another worker or an
// operator), so the finding was not recorded.
var ErrSettled = errors.New("operation already settled")

func externalID(repo string, n int64) string { return fmt.Sprintf("%s#%d", repo, n) }

// settleFound settles an operation from the marked issues found, oldest
// first: the oldest is the ticket, any other a duplicate to close.
func (s *Service) settleFound(ctx context.Context, key operations.Key, row downstreamRow, t tracker.Tracker, repo string, marked []tracker.Issue) error {
	keep := marked[0]
	known := row.duplicates()
	dups := known
	for _, other := range marked[1:] {
		id := externalID(repo, other.Number)
		if i := slices.IndexFunc(dups, func(d Duplicate) bool { return d.ExternalID == id }); i >= 0 && dups[i].Closed {
			continue
		}
		closed := other.State == "closed" || s.closeDuplicate(ctx, t, key, keep, other) == nil
		dups = slices.DeleteFunc(dups, func(d Duplicate) bool { return d.ExternalID == id })
		dups = append(dups, Duplicate{ExternalID: id, ExternalURL: other.URL, Closed: closed, KeptID: externalID(repo, keep.Number)})
		s.count(ReconcileDuplicate)
	}
	if row.Status == DownstreamSucceeded && len(marked) == 1 {
		s.count(ReconcileVerified)
	} else if row.Status != DownstreamSucceeded {
		s.count(ReconcileFound)
	}
	rctx, cancel := detach(ctx)
	defer cancel()
	return s.succeed(rctx, key, row, keep, repo, dups, "found", historyActor, "")
}

func (s *Service) closeDuplicate(ctx context.Context, t tracker.Tracker, key operations.Key, keep, dup tracker.Issue) error {
	note := fmt.Sprintf("Duplicate of #%d. ticketd filed this issue twice for one operation (%s/%s): a request went unanswered "+
		"and the tracker has no idempotency key, so the retry could not be deduplicated. Keeping #%d, the older; closing this one.",
		keep.Number, key.Tenant, key.OperationID, keep.Number)
	if _, err := t.CreateComment(ctx, dup.Number, note); err != nil {
		return err
	}
	closed := "closed"
	_, err := t.EditIssue(ctx, dup.Number, tracker.IssueEdit{State: &closed})
	return err
}

// succeed records keep as the operation's issue: on the first settling it
// creates the local ticket that mirrors it, in one transaction with the
// record's move to succeeded; on a later duplicate check it repoints the
// mirror at the oldest issue if that changed.
func (s *Service) succeed(ctx context.Context, key operations.Key, row downstreamRow, keep tracker.Issue, repo string, dups []Duplicate, how, actor, note string) error {
	extID, extURL := externalID(repo, keep.Number), keep.URL
	var req trackedRequest
	if err := json.Unmarshal([]byte(row.Request), &req); err != nil {
		return fmt.Errorf("operation %s: bad stored request: %w", key, err)
	}
	ticketID, err := uuid.Parse(row.TicketID)
	if err != nil {
		return fmt.Errorf("operation %s: bad ticket ID: %w", key, err)
	}
	// After a re-send the earlier request's issue may still surface in a
	// lagging list: keep checking for duplicates for a few settle windows
	// past the last request.
	now := time.Now().UTC()
	var next *time.Time
	if row.Attempts > 1 && row.LastSentAt != nil {
		n := now.Add(s.tracked.Settle)
		if row.Status != DownstreamSucceeded {
			n = row.LastSentAt.Add(s.tracked.Settle)
			next = &n
		} else if n.Before(row.LastSentAt.Add(4 * s.tracked.Settle)) {
			next = &n
		}
	}
	if slices.ContainsFunc(dups, func(d Duplicate) bool { return !d.Closed }) && next == nil {
		n := now.Add(s.tracked.Settle)
		next = &n
	}
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if row.Status != DownstreamSucceeded {
			ok, err := operations.Settle(tx, key, operations.StatusSucceeded, ticketID.String(), "")
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: operation %s", ErrSettled, key)
			}
			eventID := uuid.Must(uuid.NewV7())
			created, err := insertTicket(tx, key.Tenant, req.Reporter, ticketID, eventID, key.OperationID, req.ticket())
			if err != nil {
				return err
			}
			created.ExternalID, created.ExternalURL = extID, extURL
			if err := setExternal(tx, key.Tenant, ticketID, extID, extURL); err != nil {
				return err
			}
			if err := s.enqueue(tx, WriteEvent{ID: eventID, Tenant: key.Tenant, Kind: EventCreated, OperationID: key.OperationID,
				At: created.CreatedAt, Ticket: created}); err != nil {
				return err
			}
		} else if deref(row.ExternalID) != extID {
			if err := setExternal(tx, key.Tenant, ticketID, extID, extURL); err != nil {
				return err
			}
		}
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": DownstreamSucceeded, "external_id": extID, "external_url": extURL, "next_check_at": next,
			"leased_until": nil, "duplicates": encodeDuplicates(dups), "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record success: %v", ErrUnavailable, err)
		}
		detail := fmt.Sprintf("%s %s (%s)", how, extID, extURL)
		if row.Status == DownstreamSucceeded {
			detail = fmt.Sprintf("duplicate check: keeping %s", extID)
		}
		if note != "" {
			detail += ": " + note
		}
		if err := addHistory(tx, key, how, actor, detail); err != nil {
			return err
		}
		for _, d := range dups {
			if slices.ContainsFunc(row.duplicates(), func(k Duplicate) bool { return k == d }) {
				continue
			}
			verb := "found and closed"
			if !d.Closed {
				verb = "found; closing it failed, retried at the next check"
			}
			if err := addHistory(tx, key, "duplicate", historyActor, fmt.Sprintf("duplicate %s %s; kept %s", d.ExternalID, verb, d.KeptID)); err != nil {
				return err
			}
		}
		return nil
	})
}

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

// checkAgain schedules another duplicate check, or ends them.
func (s *Service) checkAgain(ctx context.Context, key operations.Key, row downstreamRow, why string) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	var next any
	if n := time.Now().UTC().Add(s.tracked.Settle); row.LastSentAt != nil && n.Before(row.LastSentAt.Add(4*s.tracked.Settle)) {
		next = n
	}
	return s.db.WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"next_check_at": next, "leased_until": nil, "updated_at": nowUTC()}).Error
		if err != nil {
			return fmt.Errorf("%w: record check: %v", ErrUnavailable, err)
		}
		return addHistory(tx, key, "looked", historyActor, why)
	})
}

// untracked refuses an update or comment on a tracker-backed ticket: ticketd
// does not carry those to the tracker yet, and changing the local row alone
// would let it silently diverge from the issue it mirrors.
func untracked(t Ticket) error {
	if t.ExternalID == "" {
		return nil
	}
	return invalidField("id", "%s mirrors %s, and ticketd does not yet carry edits or comments to the tracker: make them there (%s)",
		t.Key, t.ExternalID, t.ExternalURL)
}

// ReconcileDue runs one round of reconciliation for the job queue: it
// reports when to look again, or done once nothing is left to check.
//
// Errors: ErrUnavailable (retry later).
func (s *Service) ReconcileDue(ctx context.Context, key operations.Key) (next time.Time, done bool, err error) {
	if _, err := s.reconcile(ctx, key, false); err != nil && !errors.Is(err, ErrSettled) {
		return time.Time{}, false, err
	}
	row, err := s.downstream(ctx, key)
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return time.Time{}, true, nil // pruned
	case err != nil:
		return time.Time{}, false, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	settled := row.Status == DownstreamSucceeded || row.Status == DownstreamFailed
	if settled && row.NextCheckAt == nil {
		return time.Time{}, true, nil
	}
	next = time.Now().Add(s.tracked.Settle)
	if row.NextCheckAt != nil {
		next = *row.NextCheckAt
	}
	if row.LeasedUntil != nil && row.LeasedUntil.After(next) {
		next = *row.LeasedUntil
	}
	// A round that could not record its step (the database failing) leaves
	// a due time in the past: look again shortly, not in a tight loop.
	if soon := time.Now().Add(time.Second); next.Before(soon) {
		next = soon
	}
	return next, false, nil
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
