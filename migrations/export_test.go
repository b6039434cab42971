package migrations

import (
	"context"
	"database/sql"
)

// DownTo rolls dialect's schema back to version, so an external test can
// build a database as an older release left it.
func DownTo(ctx context.Context, db *sql.DB, dialect string, version int64) error {
	p, err := provider(db, dialect)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}
