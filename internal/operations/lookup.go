package operations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/ticketd/ticketd/internal/db"
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
// result's row into replay.Into, in the same query; it reports whether the
// row was read. The columns are scanned by hand: GORM's reflective Scan
// was most of a replay's allocations in the store. A missing record is the
// bare ErrNotFound: every fresh write meets it, and RunReplaying only
// tests for it.
func (l *Ledger) lookup(ctx context.Context, key Key, replay Replay) (Record, bool, error) {
	if replay.Join != nil && len(replay.Into) != replay.Join.columns {
		return Record{}, false, fmt.Errorf("operation %s: %d scan targets for %d result columns", key, len(replay.Into), replay.Join.columns)
	}
	if l.db.Dialector.Name() == "postgres" {
		return l.lookupPostgres(ctx, key, replay)
	}
	var (
		row  record
		rows *sql.Rows
		err  error
		op   = key.OperationID.String()
	)
	if replay.Join != nil {
		rows, err = l.db.WithContext(ctx).Raw(replay.Join.sqlite,
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
	dest := row.lookupColumns()
	var found bool
	if replay.Join != nil {
		dest = row.joinedColumns(replay, &found)
	}
	if err := rows.Scan(dest...); err != nil {
		return Record{}, false, fmt.Errorf("%w: read operation: %v", ErrUnavailable, err)
	}
	if found {
		replay.into(dest)
		if err := rows.Scan(dest...); err != nil {
			return Record{}, false, fmt.Errorf("%w: read operation result: %v", ErrUnavailable, err)
		}
	}
	row.TenantID, row.Action, row.OperationID = key.Tenant, key.Action, key.OperationID.String()
	rec, err := row.toRecord()
	return rec, found, err
}

// lookupPostgres is lookup on PostgreSQL, with a plan made once per
// connection (db.Statement.ByKey), since every write sends it first.
// Planned on each execution, as the session plans, the statement with the
// result's row joined cost PostgreSQL 0.15-0.28 ms a planning and about
// 0.05 executing (docs/perf.md). Each table has one index its key can use:
// operations_tenant_created is partial (migrations/postgres/00017) so that
// it cannot cost the same as the primary key on small tables, as it did
// (TestReplayReadsOnlyItsOwnKeyAfterTheTablesGrow); the result's row is
// read as Join.postgres says.
func (l *Ledger) lookupPostgres(ctx context.Context, key Key, replay Replay) (Record, bool, error) {
	row := record{TenantID: key.Tenant, Action: key.Action, OperationID: key.OperationID.String()}
	st := db.Statement{SQL: lookupPostgresSQL, Args: []any{key.Tenant, key.Action, row.OperationID}, Table: "operations", ByKey: true}
	if replay.Join != nil {
		st.SQL, st.InIndexOrder = replay.Join.postgres, true
		st.Args = append(st.Args, string(StatusSucceeded))
	}
	var found, read bool
	err := db.Query(ctx, l.db, st, func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		found = true
		if replay.Join == nil {
			return rows.Scan(row.lookupColumns()...)
		}
		dest := row.joinedColumns(replay, &read)
		if err := rows.Scan(dest...); err != nil || !read {
			return err
		}
		replay.into(dest)
		return rows.Scan(dest...)
	})
	switch {
	case err != nil:
		return Record{}, false, fmt.Errorf("%w: look up operation: %v", ErrUnavailable, err)
	case !found:
		return Record{}, false, ErrNotFound
	}
	rec, err := row.toRecord()
	return rec, read, err
}

// lookupColumns are the scan targets of the columns lookupSQL reads.
func (r *record) lookupColumns() []any {
	return []any{&r.Fingerprint, &r.Status, &r.ResultID, &r.Error, &r.ApprovalID, &r.CreatedAt, &r.UpdatedAt}
}

// joinedColumns are lookupColumns, then a Join's found flag and a
// placeholder per result column. A joined row is read twice: first to learn
// whether the join found the result (its columns are NULL when not), then,
// with its placeholders swapped for replay.Into (into), the result too.
func (r *record) joinedColumns(replay Replay, found *bool) []any {
	dest := append(r.lookupColumns(), found)
	for range replay.Join.columns {
		dest = append(dest, new(any))
	}
	return dest
}

// into puts Into in the place of joinedColumns' placeholders in dest.
func (replay Replay) into(dest []any) {
	copy(dest[len(dest)-replay.Join.columns:], replay.Into)
}

// lookupSQL reads a key's record or its tombstone, in the one round trip a
// fresh write's fast path already pays: Prune replaces the one by the other
// in one transaction, and a claim does not insert a record under a
// tombstoned key (ClaimWith).
const lookupSQL = `SELECT fingerprint, status, result_id, error, approval_id, created_at, updated_at
FROM operations WHERE tenant_id = ? AND action = ? AND operation_id = ?
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at
FROM operation_tombstones WHERE tenant_id = ? AND action = ? AND operation_id = ?`

// lookupPostgresSQL is lookupSQL numbered for PostgreSQL, each key sent once.
const lookupPostgresSQL = `SELECT fingerprint, status, result_id, error, approval_id, created_at, updated_at
FROM operations WHERE tenant_id = $1 AND action = $2 AND operation_id = $3
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at
FROM operation_tombstones WHERE tenant_id = $1 AND action = $2 AND operation_id = $3`

// Replay names what RunReplaying reads with a record: Join, made once per
// result table, and Into, this call's scan targets, one per Join column.
// Into's contents mean something only when Outcome.ResultRead says so.
type Replay struct {
	Join *Join
	Into []any
}

// Join is the query that reads a record together with the row its
// result_id names (the row's id within the tenant), in each dialect.
type Join struct {
	sqlite, postgres string
	columns          int
}

// NewJoin returns the Join for result rows of table, reading columns in
// order. The table's primary key must be (tenant_id, id), with id a uuid
// on PostgreSQL.
func NewJoin(table string, columns []string) *Join {
	qualified := make([]string, len(columns))
	for i, c := range columns {
		qualified[i] = "r." + c
	}
	// A tombstone has no result: its row finds none and reads NULLs.
	none := strings.Repeat(", NULL", len(columns))
	sqlite := `SELECT o.fingerprint, o.status, o.result_id, o.error, o.approval_id, o.created_at, o.updated_at,
	r.id IS NOT NULL, ` + strings.Join(qualified, ", ") + `
FROM operations o LEFT JOIN "` + table + `" r ON r.tenant_id = o.tenant_id AND r.id = o.result_id AND o.status = ?
WHERE o.tenant_id = ? AND o.action = ? AND o.operation_id = ?
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at, false` + none + `
FROM operation_tombstones WHERE tenant_id = ? AND action = ? AND operation_id = ?`
	// The plan is made once (lookupPostgres), possibly on tables never
	// analysed and nearly empty, where every index that starts with
	// tenant_id looks as cheap as the primary key for "tenant_id = x AND
	// id = y", and the one kept (tickets_tenant_updated_desc, in every
	// case tried) walks the whole tenant once the table has grown. The id
	// as a range of one, in id order, with sorting off (InIndexOrder),
	// leaves only the indexes on (tenant_id, id) to the plan: an equality
	// would make the order on id void, and any index would do.
	postgres := `SELECT o.fingerprint, o.status, o.result_id, o.error, o.approval_id, o.created_at, o.updated_at,
	r.found IS NOT NULL, ` + strings.Join(qualified, ", ") + `
FROM operations o LEFT JOIN LATERAL (SELECT true AS found, ` + strings.Join(columns, ", ") + ` FROM "` + table + `" t
	WHERE t.tenant_id = o.tenant_id AND t.id BETWEEN CAST(o.result_id AS uuid) AND CAST(o.result_id AS uuid) AND o.status = $4
	ORDER BY t.id LIMIT 1) r ON true
WHERE o.tenant_id = $1 AND o.action = $2 AND o.operation_id = $3
UNION ALL SELECT fingerprint, 'expired', NULL, NULL, NULL, pruned_at, pruned_at, false` + none + `
FROM operation_tombstones WHERE tenant_id = $1 AND action = $2 AND operation_id = $3`
	return &Join{sqlite: sqlite, postgres: postgres, columns: len(columns)}
}
