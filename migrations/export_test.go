package migrations

import (
	"context"
	"database/sql"
)

// UpTo applies dialect's migrations up to version and no further, so an
// external test can build a database as an older release left it.
func UpTo(ctx context.Context, db *sql.DB, dialect string, version int64) error {
	p, err := provider(db, dialect)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// DownTo rolls dialect's schema back to version.
func DownTo(ctx context.Context, db *sql.DB, dialect string, version int64) error {
	p, err := provider(db, dialect)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}
