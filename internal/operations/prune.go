package operations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"
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
// a time, across every tenant and action, and leaves a tombstone for each
// (its key and fingerprint) in the transaction that deletes it, so there is
// no moment when neither exists: a lookup of a pruned key answers status
// expired, a retry ErrExpired, and the key is never claimed again.
// Tombstones are kept for good. Records in any other status (pending,
// failed, unknown) are never deleted: they still need an answer or an
// operator. With dryRun it only counts, and writes nothing.
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
	succeeded := string(StatusSucceeded)

	if err := l.db.WithContext(ctx).Model(&record{}).Where(pruneEligible, succeeded, cutoff).Count(&res.Eligible).Error; err != nil {
		return res, fmt.Errorf("%w: count prunable operations: %v", ErrUnavailable, err)
	}
	if dryRun {
		return res, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("prune stopped after %d records: %w", res.Deleted, err)
		}
		n, err := l.pruneBatch(ctx, cutoff, batchSize)
		if err != nil {
			return res, fmt.Errorf("%w: prune operations (after %d deleted): %v", ErrUnavailable, res.Deleted, err)
		}
		res.Batches++
		res.Deleted += n
		if n < int64(batchSize) {
			return res, nil
		}
	}
}

const pruneEligible = "status = ? AND updated_at < ?"

// pruneDeleteSQL deletes one batch and returns what its tombstones keep.
// Row-value IN works on PostgreSQL and SQLite alike and needs no
// dialect-specific row identifier (ctid, rowid).
const pruneDeleteSQL = `DELETE FROM operations WHERE ` + pruneEligible + ` AND (tenant_id, action, operation_id) IN (
	SELECT tenant_id, action, operation_id FROM operations WHERE ` + pruneEligible + ` LIMIT ?)
RETURNING tenant_id, action, operation_id, fingerprint`

// tombstoneBatch is how many tombstones one INSERT writes: five parameters
// each, far below either database's limit on parameters.
const tombstoneBatch = 200

// pruneBatch deletes up to batchSize eligible records and writes their
// tombstones, in one transaction, and returns how many it deleted.
func (l *Ledger) pruneBatch(ctx context.Context, cutoff time.Time, batchSize int) (int64, error) {
	var n int64
	succeeded := string(StatusSucceeded)
	err := l.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		rows, err := tx.Raw(pruneDeleteSQL, succeeded, cutoff, succeeded, cutoff, batchSize).Rows()
		if err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		defer rows.Close()
		now := time.Now().UTC().Truncate(time.Microsecond)
		var stones []tombstone
		for rows.Next() {
			t := tombstone{PrunedAt: now}
			if err := rows.Scan(&t.TenantID, &t.Action, &t.OperationID, &t.Fingerprint); err != nil {
				return fmt.Errorf("read deleted record: %w", err)
			}
			stones = append(stones, t)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		if err := rows.Close(); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		n = int64(len(stones))
		if n == 0 {
			return nil
		}
		// A key tombstoned already (the one race ClaimWith describes)
		// keeps its first tombstone.
		if err := tx.Clauses(clause.OnConflict{DoNothing: true}).CreateInBatches(stones, tombstoneBatch).Error; err != nil {
			return fmt.Errorf("write tombstones: %w", err)
		}
		return nil
	})
	return n, err
}
