// Package db opens ticketd's database from a URL: PostgreSQL for production,
// embedded SQLite (pure Go) for a zero-setup server and for tests.
package db

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// Dialect names the SQL dialect behind a URL; it selects the migration set.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// ErrBadURL is returned for a database URL that is neither postgres:// nor sqlite://.
var ErrBadURL = errors.New(`database URL must be "postgres://user@host:port/db?sslmode=…" or "sqlite://PATH"`)

// DB is an open database and the dialect it speaks.
type DB struct {
	Gorm    *gorm.DB
	Dialect Dialect
	// Replica is the read replica AttachReplica set, or nil.
	Replica *Replica
}

// ParseURL splits a database URL into its dialect and the driver's DSN.
// For SQLite it adds the pragmas ticketd relies on: WAL so readers never wait
// for the writer, a busy timeout so writers queue instead of failing, foreign
// keys, and IMMEDIATE write transactions so two writers never both read and
// then deadlock on lock upgrade.
func ParseURL(raw string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		if _, err := url.Parse(raw); err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrBadURL, err)
		}
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite://"):
		path := strings.TrimPrefix(raw, "sqlite://")
		query := ""
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path, query = path[:i], path[i+1:]
		}
		switch {
		case path == "":
			return "", "", fmt.Errorf("%w: the sqlite path is empty", ErrBadURL)
		case path == ":memory:":
			// Each pooled connection would get its own empty database.
			return "", "", fmt.Errorf("%w: in-memory SQLite is not supported; name a file", ErrBadURL)
		}
		params, err := url.ParseQuery(query)
		if err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrBadURL, err)
		}
		params.Add("_pragma", "busy_timeout(10000)")
		params.Add("_pragma", "journal_mode(WAL)")
		params.Add("_pragma", "foreign_keys(1)")
		params.Add("_pragma", "synchronous(NORMAL)")
		params.Set("_txlock", "immediate")
		return SQLite, "file:" + path + "?" + params.Encode(), nil
	default:
		return "", "", ErrBadURL
	}
}

// Options tune how Open connects; the zero value is the defaults.
type Options struct {
	// Session bounds each PostgreSQL session (SQLite has no sessions to
	// lose); zero fields take the defaults.
	Session Session
}

// Open connects to the database at rawURL with the default Options and
// checks that it answers. It does not migrate: see the migrations package.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	return OpenWith(ctx, rawURL, Options{})
}

// OpenWith is Open with opts.
func OpenWith(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	dialect, dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	var dialector gorm.Dialector
	switch dialect {
	case Postgres:
		pool, err := openPostgres(dsn, opts.Session)
		if err != nil {
			return nil, err
		}
		dialector = postgres.New(postgres.Config{Conn: pool})
	case SQLite:
		dialector = sqlite.Dialector{DSN: dsn, Conn: openSQLite(dsn)}
	}
	g, err := gorm.Open(dialector, &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true, // every write ticketd makes is already in an explicit transaction
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	})
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB.SetMaxOpenConns(PoolSize(dialect))
	switch dialect {
	case Postgres:
		// A multi-host URL with target_session_attrs=read-write (docs/scale.md)
		// needs nothing more here to survive a failover: pgx's
		// database/sql driver pings a connection idle for over a second
		// before handing it out again and reports a dead one as bad, so
		// connections to the lost primary are discarded, and every new one
		// walks the hosts until one accepts writes.
		sqlDB.SetMaxIdleConns(10)
		sqlDB.SetConnMaxIdleTime(5 * time.Minute)
		sqlDB.SetConnMaxLifetime(time.Hour)
	case SQLite:
		sqlDB.SetMaxIdleConns(PoolSize(SQLite))
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := sqlDB.PingContext(pingCtx); err != nil {
		_ = sqlDB.Close()
		return nil, fmt.Errorf("connect to %s database: %w", dialect, err)
	}
	return &DB{Gorm: g, Dialect: dialect}, nil
}

// PoolSize is how many connections Open keeps to a database of dialect at
// most: 20 for PostgreSQL; 4 for SQLite, where one writer at a time is the
// rule anyway and a few connections let readers proceed under WAL while a
// write is in flight. The per-tenant concurrency cap is derived from it and
// must stay below it (docs/contract.md#fair-share).
func PoolSize(d Dialect) int {
	if d == SQLite {
		return 4
	}
	return 20
}

// Close releases the connection pool, and the read replica's.
func (d *DB) Close() error {
	var replicaErr error
	if d.Replica != nil {
		replicaErr = d.Replica.Close()
	}
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return errors.Join(sqlDB.Close(), replicaErr)
}
