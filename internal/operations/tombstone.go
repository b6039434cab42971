package operations

import (
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// tombstone is what Prune leaves of a record (operation_tombstones): the
// key and the fingerprint, so that a pruned write stays answerable (status
// expired) and its key is never claimed again. Kept for good.
type tombstone struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	Action      string    `gorm:"column:action;primaryKey"`
	OperationID string    `gorm:"column:operation_id;primaryKey"`
	Fingerprint string    `gorm:"column:fingerprint"`
	PrunedAt    time.Time `gorm:"column:pruned_at"`
}

func (tombstone) TableName() string { return "operation_tombstones" }

// toRecord is the tombstone as a record of status expired: created and
// updated at the time it was pruned, with no result.
func (t tombstone) toRecord() (Record, error) {
	return record{
		TenantID: t.TenantID, Action: t.Action, OperationID: t.OperationID, Fingerprint: t.Fingerprint,
		Status: string(StatusExpired), CreatedAt: t.PrunedAt, UpdatedAt: t.PrunedAt,
	}.toRecord()
}

// findTombstone reads the tombstone matching where (a key, or a tenant and
// operation ID), newest first, as a record of status expired, or
// ErrNotFound.
func findTombstone(db *gorm.DB, where string, args ...any) (Record, error) {
	var t tombstone
	err := db.Where(where, args...).Order("pruned_at DESC").Take(&t).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return Record{}, ErrNotFound
	case err != nil:
		return Record{}, fmt.Errorf("%w: read operation tombstone: %v", ErrUnavailable, err)
	}
	return t.toRecord()
}

// expired is ErrExpired for rec, a tombstone, answering a call that brought
// fingerprint (none: a lookup, which brings no input). Whether the input is
// the pruned write's is the caller's own to know: a replay or a conflict
// would have told it as much while the record was kept.
func expired(rec Record, fingerprint string) error {
	input := ""
	switch {
	case fingerprint == "":
	case fingerprint == rec.Fingerprint:
		input = "; this call's input is the same as that write's"
	default:
		input = "; this call's input differs from that write's"
	}
	return fmt.Errorf("%w (key %s): the write ran, and its record was pruned at %s%s",
		ErrExpired, rec.Key, rec.UpdatedAt.Format(time.RFC3339), input)
}
