package operations

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"
)

// ClaimWith is the ledger's claim of a key as the first item of a write's
// own WITH list (PostgreSQL), so that the claim and the write's first step
// cost one round trip instead of two. It inserts the record unless the key
// exists, waiting at most the ledger's lock timeout for a concurrent holder
// of the key: the set_config in the row source runs before the insert can
// wait, the one in RETURNING only once the row is in, and restores "wait
// forever" for the rest of the transaction, which the write timeout alone
// bounds. Both are transaction-local: in a statement that runs outside a
// transaction block (RunAutocommit) they last for that statement, and a
// pooled session never keeps them. Its named parameters (@claim_*) come
// from Fold.Args.
//
// The statement must do nothing else unless ClaimWon holds, and return it as
// a column, for Fold.Report: a key another call holds is that call's, and
// the ledger answers from its record.
//
// A tombstoned key (its record pruned) is never claimed: the ledger answers
// ErrExpired. The tombstone is read in the statement's snapshot; one that
// Prune commits while the claim waits for the record it is deleting is not
// seen, but the ledger's fast path read that record before, and answered it,
// so a claim only waits so for a record made after its fast path.
const ClaimWith = claimInsert + claimEnd

// ClaimWithIf is ClaimWith that claims only when cond also holds, a boolean
// SQL expression over the statement's parameters or the WITH items before
// the claim: for a write that commits in the claim's own statement
// (RunAutocommit), where a claim whose write then found it could not go
// ahead would commit a record with nothing behind it.
func ClaimWithIf(cond string) string {
	return claimInsert + "\n\t\tAND (" + cond + ")" + claimEnd
}

// claimInsert and claimEnd are ClaimWith around the end of its WHERE clause.
const (
	claimInsert = `claim AS (
	INSERT INTO "operations" (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
	SELECT @claim_tenant, @claim_action, CAST(@claim_op AS uuid), @claim_fingerprint, @claim_status, @claim_result,
		CAST(@claim_now AS timestamptz), CAST(@claim_now AS timestamptz)
	FROM (SELECT set_config('lock_timeout', @claim_lock_timeout, true)) AS bounded
	WHERE NOT EXISTS (SELECT 1 FROM operation_tombstones
		WHERE tenant_id = @claim_tenant AND action = @claim_action AND operation_id = CAST(@claim_op AS uuid))`
	claimEnd = `
	ON CONFLICT DO NOTHING
	RETURNING set_config('lock_timeout', '0', true)
)`
)

// ClaimWon is true within a statement that begins with ClaimWith once the
// claim inserted the record. Written in a WHERE clause it is an uncorrelated
// subquery, which PostgreSQL evaluates once, before the rows it gates are
// read: the claim runs, and its lock timeout ends, before anything else in
// the statement can wait for a lock or take a number.
const ClaimWon = `EXISTS (SELECT 1 FROM claim)`

// claimPostgresSQL is the claim alone, for writes that do not fold it.
const claimPostgresSQL = "WITH " + ClaimWith + "\nSELECT 1 FROM claim"

// claimSQLiteSQL is the claim on SQLite, where a write transaction holds
// the one writer lock from its BEGIN (IMMEDIATE), so nothing commits
// between its read of the tombstones and its insert.
const claimSQLiteSQL = `INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
SELECT ?, ?, ?, ?, ?, ?, ?, ?
WHERE NOT EXISTS (SELECT 1 FROM operation_tombstones WHERE tenant_id = ? AND action = ? AND operation_id = ?)
ON CONFLICT DO NOTHING`

// Fold is one key's claim as the ledger hands it to a FoldedWriteFunc. On
// PostgreSQL the write runs it (Inline) in its first statement and tells
// the ledger what came of it (Report); elsewhere the ledger has claimed the
// key already and Won is true.
type Fold struct {
	row         record
	lockTimeout string
	inline      bool
	reported    bool
	won         bool
	err         error // the statement's error, as Report was told it
}

// FoldedWriteFunc is a write that runs the ledger's claim of its key in its
// own first statement when fold.Inline says so, and reports the outcome with
// fold.Report. After a claim that did not win it must write nothing more and
// return nil. An error rolls everything back, the record included.
type FoldedWriteFunc func(tx *gorm.DB, fold *Fold) error

// Inline reports whether the write must run the claim itself: a statement
// that begins with ClaimWith and gates the rest on ClaimWon.
func (f *Fold) Inline() bool { return f.inline }

// Won reports whether this call holds the key: after the ledger's own claim,
// always (the write does not run otherwise); after an inline one, what the
// statement reported.
func (f *Fold) Won() bool { return f.won }

// Args adds the claim's named parameters to args, the write's statement's.
func (f *Fold) Args(args map[string]any) {
	args["claim_tenant"], args["claim_action"], args["claim_op"] = f.row.TenantID, f.row.Action, f.row.OperationID
	args["claim_fingerprint"], args["claim_status"], args["claim_result"] = f.row.Fingerprint, f.row.Status, f.row.ResultID
	args["claim_now"], args["claim_lock_timeout"] = f.row.CreatedAt, f.lockTimeout
}

// Report tells the ledger what the statement holding the inline claim did:
// won is its ClaimWon column, err its error (a lock timeout there is the
// claim's, since the claim ends it: ErrInProgress).
func (f *Fold) Report(won bool, err error) {
	f.reported, f.won, f.err = true, won && err == nil, err
}

// RunFolded is RunReplaying for a write that folds the claim into its own
// first statement on PostgreSQL (FoldedWriteFunc): a first execution costs
// one round trip less. The answers, errors and guarantees are RunReplaying's;
// gate's consuming step runs once the key is claimed: on PostgreSQL after
// the write (whose first statement claimed it), elsewhere before it.
func (l *Ledger) RunFolded(ctx context.Context, key Key, fingerprint, resultID string, gate GateFunc, replay Replay, write FoldedWriteFunc) (Outcome, error) {
	return l.run(ctx, key, fingerprint, resultID, gate, replay, l.db.Dialector.Name() == "postgres", nil, write)
}

// errClaimTimedOut says the claim waited its lock timeout for a concurrent
// holder of the key: ErrInProgress.
var errClaimTimedOut = errors.New("claim timed out")

// claimThenWrite claims fold's key (itself, or through the write's statement
// when fold is inline) and, when this call won it, runs the write and
// consume. A claim that did not win leaves fold.won false and nothing written.
func (l *Ledger) claimThenWrite(tx *gorm.DB, fold *Fold, consume WriteFunc, write FoldedWriteFunc) error {
	if !fold.inline {
		if err := l.claim(tx, fold); err != nil {
			return claimFailed(err)
		}
		if !fold.won {
			return nil
		}
		if consume != nil {
			if err := consume(tx); err != nil {
				return err
			}
		}
		return write(tx, fold)
	}
	err := write(tx, fold)
	switch {
	case fold.err != nil && isLockTimeout(fold.err):
		return errClaimTimedOut
	case err != nil:
		return err
	case fold.err != nil:
		return claimFailed(fold.err)
	case !fold.reported:
		return fmt.Errorf("operation %s/%s/%s: the write never ran its claim", fold.row.TenantID, fold.row.Action, fold.row.OperationID)
	case fold.won && consume != nil:
		return consume(tx)
	}
	return nil
}

// claimFailed is the error of a claim statement that failed: a lock timeout
// is the claim's own (ErrInProgress, through errClaimTimedOut), anything else
// left the store unable to answer.
func claimFailed(err error) error {
	if isLockTimeout(err) {
		return errClaimTimedOut
	}
	return fmt.Errorf("%w: claim operation: %v", ErrUnavailable, err)
}

// claim inserts fold's record unless its key exists, and sets fold.won when
// it did. On PostgreSQL it waits at most the lock timeout for a concurrent
// holder of the key (ClaimWith) and reads the RETURNING row itself: GORM's
// Scan renders every statement with its arguments for a logger that discards
// it, a regular expression pass that was 7 % of a create's allocations
// (docs/perf.md).
func (l *Ledger) claim(tx *gorm.DB, fold *Fold) error {
	if tx.Dialector.Name() != "postgres" {
		r := fold.row
		res := tx.Table("operations").Exec(claimSQLiteSQL, r.TenantID, r.Action, r.OperationID, r.Fingerprint, r.Status, r.ResultID, r.CreatedAt, r.UpdatedAt,
			r.TenantID, r.Action, r.OperationID)
		fold.won = res.RowsAffected > 0
		return res.Error
	}
	args := make(map[string]any, 8)
	fold.Args(args)
	rows, err := tx.Raw(claimPostgresSQL, args).Rows()
	if err != nil {
		return err
	}
	defer rows.Close()
	fold.won = rows.Next()
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}
