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
// advisory lock serialises replicas that start at the same time. A schema
// that has exactly the embedded migrations applied (every start but the
// first after an upgrade) is recognised first by one read, without the
// lock.
func Up(ctx context.Context, db *sql.DB, dialect string) (int64, error) {
	p, err := provider(db, dialect)
	if err != nil {
		return 0, err
	}
	if v, ok := current(ctx, db, p.ListSources()); ok {
		return v, nil
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

// current reads goose's version table once and reports whether the
// migrations applied are exactly sources, and the newest version. goose's
// own checks (Provider.HasPending, GetDBVersion) first ask the catalog
// whether the table exists, each time, which on a backend with cold
// catalog caches is most of their cost (docs/perf.md, cold start). Any
// error (no table yet), a version rolled back in goose's legacy way
// (is_applied false), or any difference from sources answers false, and
// Up takes goose's full path, which reports what is wrong.
func current(ctx context.Context, db *sql.DB, sources []*goose.Source) (int64, bool) {
	rows, err := db.QueryContext(ctx, "SELECT version_id, is_applied FROM goose_db_version WHERE version_id > 0")
	if err != nil {
		return 0, false
	}
	defer rows.Close()
	applied := make(map[int64]bool, len(sources))
	for rows.Next() {
		var (
			v  int64
			ok bool
		)
		if err := rows.Scan(&v, &ok); err != nil || !ok {
			return 0, false
		}
		applied[v] = true
	}
	if rows.Err() != nil || len(applied) != len(sources) || len(sources) == 0 {
		return 0, false
	}
	for _, s := range sources {
		if !applied[s.Version] {
			return 0, false
		}
	}
	return sources[len(sources)-1].Version, true
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
