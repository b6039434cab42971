package operations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// Lookup returns the record for key, or ErrNotFound. A key whose record was
// pruned answers ErrExpired, with the tombstone as a record of status
// expired. It never sees another tenant's records: the tenant is part of
// the key.
func (l *Ledger) Lookup(ctx context.Context, key Key) (Record, error) {
	rec, _, err := l.lookup(ctx, key, Replay{})
	switch {
	case errors.Is(err, ErrNotFound):
		return Record{}, fmt.Errorf("%w (key %s)", ErrNotFound, key)
	case err == nil && rec.Status == StatusExpired:
		return rec, expired(rec, "")
	}
	return rec, err
}

// lookup reads key's record, or its tombstone as a record of status
// expired, and, when replay names a result and the record succeeded, that
// result's row into replay.Into, in one query; it reports whether the row
// was read. The columns are scanned by hand: GORM's reflective Scan was
// most of a replay's allocations in the store. A missing record is the
// bare ErrNotFound: every fresh write meets it, and RunReplaying only
// tests for it.
func (l *Ledger) lookup(ctx context.Context, key Key, replay Replay) (Record, bool, error) {
	var (
		row  record
		rows *sql.Rows
		err  error
		op   = key.OperationID.String()
	)
	if replay.Join != nil {
		rows, err = l.db.WithContext(ctx).Raw(replay.Join.query(l.db.Dialector.Name()),
			string(StatusSucceeded), key.Tenant, key.Action, op, key.Tenant, key.Action, op).Rows()
	} else {
		rows, err = l.db.WithContext(ctx).Raw(lookupSQL, key.Tenant, key.Action, op, key.Tenant, key.Action, op).Rows()
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("%w: look up operation: %v", ErrUnavailable, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Record{}, false, fmt.Errorf("%w: look up operation: %v", ErrUnavailable, err)
		}
		return Record{}, false, ErrNotFound
	}
	dest := []any{&row.Fingerprint, &row.Status, &row.ResultID, &row.Error, &row.ApprovalID, &row.CreatedAt, &row.UpdatedAt}
	var found bool
	if replay.Join != nil {
		// A row may be read twice: first to learn whether the join found
		// the result (its columns are NULL when not), then into Into.
		dest = append(dest, &found)
		for range replay.Join.columns {
			dest = append(dest, new(any))
		}
	}
	if err := rows.Scan(dest...); err != nil {
		return Record{}, false, fmt.Errorf("%w: read operation: %v", ErrUnavailable, err)
	}
	if found {
		if len(replay.Into) != replay.Join.columns {
			return Record{}, false, fmt.Errorf("operation %s: %d scan targets for %d result columns", key, len(replay.Into), replay.Join.columns)
		}
		copy(dest[8:], replay.Into)
		if err := rows.Scan(dest...); err != nil {
			return Record{}, false, fmt.Errorf("%w: read operation result: %v", ErrUnavailable, err)
		}
	}
	row.TenantID, row.Action, row.OperationID = key.Tenant, key.Action, key.OperationID.String()
	rec, err := row.toRecord()
	return rec, found, err
}

// lookupSQL reads a key's record or its tombstone, in the one round trip a
// fresh write's fast path already pays: Prune replaces the one by the other
// in one transaction, and a claim does not insert a record under a
// tombstoned key (ClaimWith).
const lookupSQL = `SELECT fingerprint, status, result_id, error, approval_id, created_at, updated_at
FROM operations WHERE tenant_id = ? AND action = ? AND operation_id = ?
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at
FROM operation_tombstones WHERE tenant_id = ? AND action = ? AND operation_id = ?`

// Replay names what RunReplaying reads with a record: Join, made once per
// result table, and Into, this call's scan targets, one per Join column.
// Into's contents mean something only when Outcome.ResultRead says so.
type Replay struct {
	Join *Join
	Into []any
}

// Join is the query that reads a record together with the row its
// result_id names (a UUID, the row's id within the tenant).
type Join struct {
	postgres, sqlite string
	columns          int
}

// NewJoin returns the Join for result rows of table, reading columns in
// order.
func NewJoin(table string, columns []string) *Join {
	qualified := make([]string, len(columns))
	for i, c := range columns {
		qualified[i] = "r." + c
	}
	// A tombstone has no result: its row finds none and reads NULLs.
	none := strings.Repeat(", NULL", len(columns))
	q := func(resultID string) string {
		return `SELECT o.fingerprint, o.status, o.result_id, o.error, o.approval_id, o.created_at, o.updated_at,
	r.id IS NOT NULL, ` + strings.Join(qualified, ", ") + `
FROM operations o LEFT JOIN "` + table + `" r ON r.tenant_id = o.tenant_id AND r.id = ` + resultID + ` AND o.status = ?
WHERE o.tenant_id = ? AND o.action = ? AND o.operation_id = ?
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at, false` + none + `
FROM operation_tombstones WHERE tenant_id = ? AND action = ? AND operation_id = ?`
	}
	return &Join{postgres: q("CAST(o.result_id AS uuid)"), sqlite: q("o.result_id"), columns: len(columns)}
}

func (j *Join) query(dialect string) string {
	if dialect == "postgres" {
		return j.postgres
	}
	return j.sqlite
}
