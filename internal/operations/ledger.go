package operations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/observe/spans"
)

// record is the row behind Record; it stays here, beside its queries.
type record struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	Action      string    `gorm:"column:action;primaryKey"`
	OperationID string    `gorm:"column:operation_id;primaryKey"`
	Fingerprint string    `gorm:"column:fingerprint"`
	Status      string    `gorm:"column:status"`
	ResultID    *string   `gorm:"column:result_id"`
	Error       *string   `gorm:"column:error"`
	ApprovalID  *string   `gorm:"column:approval_id"`
	CreatedAt   time.Time `gorm:"column:created_at"`
	UpdatedAt   time.Time `gorm:"column:updated_at"`
}

func (record) TableName() string { return "operations" }

func (r record) toRecord() (Record, error) {
	id, err := uuid.Parse(r.OperationID)
	if err != nil {
		return Record{}, fmt.Errorf("operation record %s/%s: bad operation_id %q: %w", r.TenantID, r.Action, r.OperationID, err)
	}
	rec := Record{
		Key:         Key{Tenant: r.TenantID, Action: r.Action, OperationID: id},
		Fingerprint: r.Fingerprint,
		Status:      Status(r.Status),
		CreatedAt:   r.CreatedAt.UTC(),
		UpdatedAt:   r.UpdatedAt.UTC(),
	}
	if r.ResultID != nil {
		rec.ResultID = *r.ResultID
	}
	if r.Error != nil {
		rec.Error = *r.Error
	}
	if r.ApprovalID != nil {
		rec.ApprovalID = *r.ApprovalID
	}
	return rec, nil
}

// Options tunes a Ledger. Zero values take the defaults.
type Options struct {
	// LockTimeout bounds how long a call waits for a concurrent call holding
	// the same key before answering ErrInProgress. Default 3s.
	LockTimeout time.Duration
	// WriteTimeout bounds a whole write transaction, which runs detached from
	// the caller's cancellation. Default 15s.
	WriteTimeout time.Duration
}

// Ledger runs writes at most once per Key.
type Ledger struct {
	db   *gorm.DB
	opts Options
}

// NewLedger returns a ledger over db (PostgreSQL or SQLite, migrated).
func NewLedger(db *gorm.DB, opts Options) *Ledger {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 3 * time.Second
	}
	// PostgreSQL counts lock_timeout in whole milliseconds and reads 0 as
	// "wait forever".
	opts.LockTimeout = max(opts.LockTimeout, time.Millisecond)
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 15 * time.Second
	}
	return &Ledger{db: db, opts: opts}
}

// WriteFunc performs the side effect inside the ledger's transaction. An
// error rolls everything back, the record included, so the same key stays
// usable.
type WriteFunc func(tx *gorm.DB) error

// Run executes write at most once for key, recording resultID — the durable
// ID of what write makes, allocated by the caller beforehand so the record
// is written complete in one statement. Calls with the same key and
// fingerprint after a success get the recorded outcome with Replayed set;
// a different fingerprint gets ErrConflict and nothing is written.
//
// Errors: ErrConflict, ErrInProgress (a concurrent call holds the key; retry
// with the same ID), ErrOutcomeUnknown (COMMIT's reply was lost), ErrUnavailable
// (the store failed before anything committed), or write's own error
// (nothing committed). The write runs detached from ctx's cancellation, bounded
// by Options.WriteTimeout, so a caller that goes away never leaves it half done.
func (l *Ledger) Run(ctx context.Context, key Key, fingerprint, resultID string, write WriteFunc) (Outcome, error) {
	return l.RunGated(ctx, key, fingerprint, resultID, nil, write)
}

// GateFunc decides, after the fast path found no record and before the key
// is claimed, whether a first execution may go ahead: an error stops it with
// nothing claimed or written (so the key stays usable). The WriteFunc it
// returns (nil: none) runs in the write's transaction once the key is
// claimed, so whatever let the write through is consumed atomically with it.
type GateFunc func(ctx context.Context) (WriteFunc, error)

// RunGated is Run with gate between the fast path and the claim: a replay or
// a conflict is answered without consulting it (docs/contract.md#approval: a replay never
// asks again). A nil gate lets every first execution through.
func (l *Ledger) RunGated(ctx context.Context, key Key, fingerprint, resultID string, gate GateFunc, write WriteFunc) (Outcome, error) {
	return l.RunReplaying(ctx, key, fingerprint, resultID, gate, Replay{}, write)
}

// RunReplaying is RunGated whose fast path also reads replay's result row in
// the same query as the record, so that a replay costs one query instead of
// two: Outcome.ResultRead then says replay.Into holds it.
func (l *Ledger) RunReplaying(ctx context.Context, key Key, fingerprint, resultID string, gate GateFunc, replay Replay, write WriteFunc) (Outcome, error) {
	return l.run(ctx, key, fingerprint, resultID, gate, replay, false, nil, func(tx *gorm.DB, _ *Fold) error { return write(tx) })
}

// run is RunReplaying, RunFolded and RunAutocommit: inline says the write
// runs the claim, single (nil: none) is the write as one statement outside
// a transaction, tried first when the gate has no consuming step.
func (l *Ledger) run(ctx context.Context, key Key, fingerprint, resultID string, gate GateFunc, replay Replay, inline bool, single AutocommitFunc, write FoldedWriteFunc) (_ Outcome, err error) {
	// One span for the whole run, so its statements nest under it in a trace.
	ctx, span := spans.Ledger(ctx, key.Action)
	defer func() { spans.End(span, err) }()
	// Fast path: a retry of a finished operation needs no write transaction.
	rec, read, err := l.lookup(ctx, key, replay)
	switch {
	case err == nil:
		out, err := answer(rec, fingerprint)
		out.ResultRead = read && out.Replayed
		return out, err
	case !errors.Is(err, ErrNotFound):
		return Outcome{}, err
	}

	var consume WriteFunc
	if gate != nil {
		if consume, err = gate(ctx); err != nil {
			return Outcome{}, err
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.WriteTimeout)
	defer cancel()
	if single != nil && consume == nil {
		if out, ran, err := l.autocommit(wctx, key, fingerprint, resultID, single); ran {
			return out, err
		}
	}
	return l.claimAndWrite(wctx, key, fingerprint, resultID, StatusSucceeded, inline, consume, write)
}

// answer turns an existing record into the reply to a call that brought
// fingerprint. Only a success is replayed; any other recorded state is
// reported as what it is, never as a success. A tombstone answers
// ErrExpired whatever the input: the key was used.
func answer(rec Record, fingerprint string) (Outcome, error) {
	out := Outcome{Record: rec}
	switch {
	case rec.Status == StatusExpired:
		return out, expired(rec, fingerprint)
	case rec.Fingerprint != fingerprint:
		return out, fmt.Errorf("%w (key %s)", ErrConflict, rec.Key)
	case rec.Status == StatusSucceeded:
		out.Replayed = true
		return out, nil
	case rec.Status == StatusPending:
		return out, fmt.Errorf("%w (key %s)", ErrInProgress, rec.Key)
	case rec.Status == StatusFailed:
		return out, fmt.Errorf("%w (key %s): %s", ErrFailed, rec.Key, rec.Error)
	default:
		return out, fmt.Errorf("%w (key %s): the record awaits reconciliation", ErrOutcomeUnknown, rec.Key)
	}
}

// claimAndWrite claims key and runs write in one transaction, then COMMIT.
// Not inline: the ledger's own claim, consume (the gate's step), the write.
// Inline: the write, whose first statement holds the claim, then consume.
// Either way consume runs only once the key is this call's, and a failing
// consume rolls everything back.
func (l *Ledger) claimAndWrite(ctx context.Context, key Key, fingerprint, resultID string, status Status, inline bool, consume WriteFunc, write FoldedWriteFunc) (Outcome, error) {
	var opts []*sql.TxOptions
	if l.db.Dialector.Name() == "postgres" {
		// The claim relies on Read Committed: a waiter must see the
		// holder's committed record with its next statement. Pin it against
		// a server or engine whose default is stricter.
		opts = append(opts, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	}
	tx := l.db.WithContext(ctx).Begin(opts...)
	if tx.Error != nil {
		return Outcome{}, fmt.Errorf("%w: begin: %v", ErrUnavailable, tx.Error)
	}
	committed := false
	defer func() {
		if committed {
			return
		}
		_ = tx.Rollback().Error
		if p := recover(); p != nil {
			panic(p)
		}
	}()

	fold := l.newFold(key, fingerprint, resultID, status, inline)
	if err := l.claimThenWrite(tx, fold, consume, write); err != nil {
		if errors.Is(err, errClaimTimedOut) {
			return inProgress(key)
		}
		return Outcome{}, err
	}
	if !fold.won {
		return answerTaken(tx, key, fingerprint)
	}

	// From here on a failure is not a failure: COMMIT may have landed and only
	// its reply been lost. Rolling back is pointless and reporting failure
	// would invite a retry under a new ID, i.e. a duplicate.
	committed = true
	if err := tx.Commit().Error; err != nil {
		return outcomeUnknown(key, fingerprint, err)
	}
	rec, err := fold.row.toRecord()
	return Outcome{Record: rec}, err
}

// newFold is key's claim as a record written complete: nobody sees it
// before it commits (and a rollback removes it), so there is no pending
// state to update. Claim's pending record is the exception: it is committed
// before the side effect it stands for.
func (l *Ledger) newFold(key Key, fingerprint, resultID string, status Status, inline bool) *Fold {
	now := time.Now().UTC().Truncate(time.Microsecond) // as stored by PostgreSQL
	return &Fold{
		row: record{
			TenantID: key.Tenant, Action: key.Action, OperationID: key.OperationID.String(), Fingerprint: fingerprint,
			Status: string(status), ResultID: &resultID, CreatedAt: now, UpdatedAt: now,
		},
		lockTimeout: strconv.FormatInt(l.opts.LockTimeout.Milliseconds(), 10),
		inline:      inline,
	}
}

// answerTaken answers a call whose claim did not win: a concurrent call
// committed the key after our fast-path read, or Prune replaced its record
// by a tombstone since (the claim refuses a tombstoned key). Read Committed
// (and SQLite's serialised writers) show db's next statement which.
func answerTaken(db *gorm.DB, key Key, fingerprint string) (Outcome, error) {
	var existing record
	err := db.Where(keyClause(key)).Take(&existing).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		rec, err := findTombstone(db, "tenant_id = ? AND action = ? AND operation_id = ?", key.Tenant, key.Action, key.OperationID.String())
		if err != nil {
			return Outcome{}, fmt.Errorf("%w: read concurrently claimed operation: %v", ErrUnavailable, err)
		}
		return answer(rec, fingerprint)
	}
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: read concurrently claimed operation: %v", ErrUnavailable, err)
	}
	rec, err := existing.toRecord()
	if err != nil {
		return Outcome{}, err
	}
	return answer(rec, fingerprint)
}

// inProgress is the answer to a claim that waited its lock timeout for a
// concurrent holder of key.
func inProgress(key Key) (Outcome, error) {
	return Outcome{Record: Record{Key: key, Status: StatusPending}}, fmt.Errorf("%w (key %s)", ErrInProgress, key)
}

// outcomeUnknown is the answer to a write whose commit was sent and whose
// reply never came (err says how).
func outcomeUnknown(key Key, fingerprint string, err error) (Outcome, error) {
	return Outcome{Record: Record{Key: key, Fingerprint: fingerprint, Status: StatusUnknown}},
		fmt.Errorf("%w (key %s): %v", ErrOutcomeUnknown, key, err)
}

func keyClause(key Key) map[string]any {
	return map[string]any{"tenant_id": key.Tenant, "action": key.Action, "operation_id": key.OperationID.String()}
}

// isLockTimeout reports PostgreSQL's lock_not_available (SQLSTATE 55P03),
// raised when lock_timeout expires.
func isLockTimeout(err error) bool {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState() == "55P03"
	}
	return strings.Contains(err.Error(), "55P03")
}

// Position is where a page of records ends, newest first.
type Position struct {
	CreatedAt   time.Time `json:"c"`
	Action      string    `json:"a"`
	OperationID string    `json:"o"`
}

// List returns up to limit of the tenant's records, newest first, strictly
// after the position when one is given, optionally only those with status.
func (l *Ledger) List(ctx context.Context, tenant string, status Status, after *Position, limit int) ([]Record, error) {
	// created_at IS NOT NULL is operations_tenant_created's predicate: the
	// index is partial so that lookups by key cannot take it (migrations 00017).
	q := l.db.WithContext(ctx).Where("tenant_id = ? AND created_at IS NOT NULL", tenant)
	if status != "" {
		q = q.Where("status = ?", string(status))
	}
	if after != nil {
		c := after.CreatedAt.UTC()
		q = q.Where("(created_at < ?) OR (created_at = ? AND action < ?) OR (created_at = ? AND action = ? AND operation_id < ?)",
			c, c, after.Action, c, after.Action, after.OperationID)
	}
	var rows []record
	if err := q.Order("created_at DESC, action DESC, operation_id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: list operations: %v", ErrUnavailable, err)
	}
	out := make([]Record, len(rows))
	for i, r := range rows {
		rec, err := r.toRecord()
		if err != nil {
			return nil, err
		}
		out[i] = rec
	}
	return out, nil
}
