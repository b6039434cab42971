// Package migrations holds ticketd's schema as embedded SQL, one set per
// dialect, and applies it with goose.
package migrations

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Up applies every pending migration for dialect ("postgres" or "sqlite")
// and returns the schema version now in force. On PostgreSQL a session
// advisory lock serialises replicas that start at the same time.
func Up(ctx context.Context, db *sql.DB, dialect string) (int64, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return 0, err
	}
	if _, err := p.Up(ctx); err != nil {
		return 0, fmt.Errorf("apply %s migrations: %w", dialect, err)
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}

func provider(db *sql.DB, dialect string) (*goose.Provider, error) {
	var (
		gooseDialect goose.Dialect
		opts         = []goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}
	)
	switch dialect {
	case "postgres":
		gooseDialect = goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("migration lock: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	case "sqlite":
		gooseDialect = goose.DialectSQLite3
	default:
		return nil, fmt.Errorf("no migrations for dialect %q", dialect)
	}
	sub, err := fs.Sub(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("migrations for %s: %w", dialect, err)
	}
	p, err := goose.NewProvider(gooseDialect, db, sub, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations for %s: %w", dialect, err)
	}
	return p, nil
}
