package operations

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultRetention is how long ticketd promises to remember a succeeded
// operation: a retry with the same ID within this window is answered from
// the record, never run again. It is far beyond any client's retry window.
const DefaultRetention = 30 * 24 * time.Hour

// DefaultPruneBatch is how many records Prune deletes per transaction: small
// enough that each statement holds its locks (SQLite: the one writer lock)
// only briefly, so serving carries on while an operator prunes.
const DefaultPruneBatch = 1000

// PruneResult says what Prune did (or, for a dry run, would do).
type PruneResult struct {
	// Eligible is how many records were old enough to go when Prune started.
	Eligible int64
	// Deleted is how many records Prune deleted; 0 on a dry run.
	Deleted int64
	// Batches is how many delete statements ran.
	Batches int
}

// Prune deletes succeeded records last updated before cutoff, batchSize at
// a time, across every tenant and action. Records in any other status
// (pending, failed, unknown) are never deleted: they still need an answer or
// an operator. With dryRun it only counts.
//
// A record is judged by updated_at, so one reconciled to succeeded late is
// kept for the full window after its reconciliation. Each batch re-checks the
// conditions in the delete itself, so a record changed concurrently is not
// deleted on stale information. ctx cancellation stops between batches; the
// batches already done stay done.
//
// Errors: ErrUnavailable (the store failed), or an error for a non-positive
// batch size or a zero cutoff.
func (l *Ledger) Prune(ctx context.Context, cutoff time.Time, batchSize int, dryRun bool) (PruneResult, error) {
	var res PruneResult
	switch {
	case cutoff.IsZero():
		return res, errors.New("prune: cutoff is required")
	case batchSize <= 0:
		return res, fmt.Errorf("prune: batch size must be positive, got %d", batchSize)
	}
	// Stored timestamps are UTC; SQLite compares them as text, so the
	// cutoff must be in the same zone to compare correctly.
	cutoff = cutoff.UTC()
	const eligible = "status = ? AND updated_at < ?"
	succeeded := string(StatusSucceeded)

	if err := l.db.WithContext(ctx).Model(&record{}).Where(eligible, succeeded, cutoff).Count(&res.Eligible).Error; err != nil {
		return res, fmt.Errorf("%w: count prunable operations: %v", ErrUnavailable, err)
	}
	if dryRun {
		return res, nil
	}
	// Row-value IN works on PostgreSQL and SQLite alike and needs no
	// dialect-specific row identifier (ctid, rowid).
	const deleteBatch = `DELETE FROM operations WHERE ` + eligible + ` AND (tenant_id, action, operation_id) IN (
		SELECT tenant_id, action, operation_id FROM operations WHERE ` + eligible + ` LIMIT ?)`
	for {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("prune stopped after %d records: %w", res.Deleted, err)
		}
		del := l.db.WithContext(ctx).Exec(deleteBatch, succeeded, cutoff, succeeded, cutoff, batchSize)
		if del.Error != nil {
			return res, fmt.Errorf("%w: prune operations (after %d deleted): %v", ErrUnavailable, res.Deleted, del.Error)
		}
		res.Batches++
		res.Deleted += del.RowsAffected
		if del.RowsAffected < int64(batchSize) {
			return res, nil
		}
	}
}
