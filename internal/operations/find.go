package operations

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
)

// Find returns the tenant's record for operationID under any action, for
// callers that know only the ID (an agent asking what became of it): the
// newest record, else the newest tombstone as a record of status expired
// (the write ran and its record was pruned), else ErrNotFound, which then
// proves nothing ran under the ID for the tenant.
func (l *Ledger) Find(ctx context.Context, tenant string, operationID uuid.UUID) (Record, error) {
	var row record
	g := l.db.WithContext(ctx)
	const byID = "tenant_id = ? AND operation_id = ?"
	var err error
	if l.db.Dialector.Name() == "postgres" {
		err = l.findPostgres(ctx, tenant, operationID.String(), &row)
	} else {
		err = g.Where(byID, tenant, operationID.String()).Order("created_at DESC").Take(&row).Error
	}
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		rec, err := findTombstone(g, byID, tenant, operationID.String())
		if errors.Is(err, ErrNotFound) {
			return Record{}, fmt.Errorf("%w (tenant %s, id %s)", ErrNotFound, tenant, operationID)
		}
		return rec, err
	case err != nil:
		return Record{}, fmt.Errorf("%w: find operation: %v", ErrUnavailable, err)
	}
	return row.toRecord()
}

// findPostgres reads into row the tenant's newest record for operationID
// under any action, or answers gorm.ErrRecordNotFound. The primary key leads
// with (tenant_id, action), so a read by tenant and ID alone walks every
// entry of the tenant (PostgreSQL 15 has no skip scan): findByIDSQL looks
// up the key once per action the tenant has used, each action found by one
// descent of the same index.
func (l *Ledger) findPostgres(ctx context.Context, tenant, operationID string, row *record) error {
	st := db.Statement{SQL: findByIDSQL, Args: []any{tenant, operationID}, Table: "operations"}
	found, err := db.QueryFirst(ctx, l.db, st, append([]any{&row.Action}, row.lookupColumns()...)...)
	switch {
	case err != nil:
		return err
	case !found:
		return gorm.ErrRecordNotFound
	}
	row.TenantID, row.OperationID = tenant, operationID
	return nil
}

// findByIDSQL is Find's read on PostgreSQL: the tenant's actions, walked
// one index descent each (a recursive min), then the full key under each.
// OFFSET 0 keeps the inner read per action; folded into a join, the planner
// matched the ID against the whole tenant instead.
const findByIDSQL = `WITH RECURSIVE actions(action) AS (
	SELECT min(action) FROM operations WHERE tenant_id = $1
	UNION ALL
	SELECT (SELECT min(n.action) FROM operations n WHERE n.tenant_id = $1 AND n.action > a.action)
	FROM actions a WHERE a.action IS NOT NULL
)
SELECT r.action, r.fingerprint, r.status, r.result_id, r.error, r.approval_id, r.created_at, r.updated_at
FROM actions a CROSS JOIN LATERAL (
	SELECT * FROM operations o WHERE o.tenant_id = $1 AND o.action = a.action AND o.operation_id = $2 OFFSET 0
) r
ORDER BY r.created_at DESC LIMIT 1`
