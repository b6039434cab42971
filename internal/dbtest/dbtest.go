// Package dbtest gives each test a database of its own (on PostgreSQL a
// schema of its own), migrated and dropped on cleanup, so tests run in
// parallel and in any order against real engines.
//
// PostgreSQL tests run when TICKETD_TEST_DATABASE_URL names a server (any
// database on it; the tests create their own). Without the variable they skip,
// so a plain `go test ./...` works anywhere; `make test` always sets it, so
// there a missing server is a failure, not a skip.
package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for creating and dropping test databases

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/migrations"
)

// EnvPostgresURL names the variable that points the tests at PostgreSQL.
const EnvPostgresURL = "TICKETD_TEST_DATABASE_URL"

// EnvRequirePostgres, when set (make test sets it), turns a missing
// PostgreSQL from a skip into a failure.
const EnvRequirePostgres = "TICKETD_REQUIRE_POSTGRES"

// PostgresURL creates a fresh, migrated PostgreSQL schema of its own for
// this test and returns a URL whose connections use it (search_path; also
// application_name, so a test can tell its own sessions in
// pg_stat_activity), with sslmode=disable so a test may route it through a
// TCP proxy. The schema is dropped when the test ends.
//
// Schemas live in one database per test process, created on first use and
// dropped when its last schema is: a schema costs a fraction of a database
// to create and drop, and migrations of one process never contend for
// goose's lock with another's.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(EnvPostgresURL)
	if base == "" {
		if os.Getenv(EnvRequirePostgres) != "" {
			tb.Fatalf("%s is set but %s is not: make test must find PostgreSQL", EnvRequirePostgres, EnvPostgresURL)
		}
		tb.Skipf("PostgreSQL tests need %s (make test sets it)", EnvPostgresURL)
	}
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", EnvPostgresURL, err)
	}
	q := u.Query()
	if q.Get("sslmode") == "" {
		q.Set("sslmode", "disable")
	}
	u.RawQuery = q.Encode()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	schema := "t_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	dbURL, err := shared.acquire(ctx, u, schema)
	if err != nil {
		tb.Fatalf("create test schema (is PostgreSQL at %s running?): %v", u.Redacted(), err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := shared.release(ctx, schema); err != nil {
			tb.Errorf("drop test schema %s: %v", schema, err)
		}
	})
	q = dbURL.Query()
	q.Set("search_path", schema)
	q.Set("application_name", schema)
	dbURL.RawQuery = q.Encode()
	return dbURL.String()
}

// processDB is this process's test database and the schemas alive in it.
type processDB struct {
	mu       sync.Mutex
	adminURL string  // the server's URL as given, for CREATE and DROP DATABASE
	name     string  // "" while there is none
	conn     *sql.DB // to name, for CREATE and DROP SCHEMA
	live     int
}

var shared processDB

// acquire creates schema, migrated, in the process database (creating that
// first if need be) and returns the database's URL. Migrations run one at a
// time, so goose's session lock is never contended (it polls every 5s).
func (p *processDB) acquire(ctx context.Context, server *url.URL, schema string) (*url.URL, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.name == "" {
		if err := p.create(ctx, server); err != nil {
			return nil, err
		}
	}
	u := *server
	u.Path = "/" + p.name
	if _, err := p.conn.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return nil, err
	}
	p.live++
	q := u.Query()
	q.Set("search_path", schema)
	mu := u
	mu.RawQuery = q.Encode()
	if err := migrate(ctx, "pgx", mu.String(), "postgres"); err != nil {
		return nil, fmt.Errorf("migrate schema %s: %w", schema, err)
	}
	return &u, nil
}

func (p *processDB) create(ctx context.Context, server *url.URL) error {
	admin, err := sql.Open("pgx", server.String())
	if err != nil {
		return err
	}
	defer admin.Close()
	name := "ticketd_test_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return err
	}
	u := *server
	u.Path = "/" + name
	conn, err := sql.Open("pgx", u.String())
	if err != nil {
		return err
	}
	p.adminURL, p.name, p.conn = server.String(), name, conn
	return nil
}

// release drops schema, and the process database with its last schema.
func (p *processDB) release(ctx context.Context, schema string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := p.conn.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
		return err
	}
	if p.live--; p.live > 0 {
		return nil
	}
	_ = p.conn.Close()
	name := p.name
	p.name, p.conn = "", nil
	admin, err := sql.Open("pgx", p.adminURL)
	if err != nil {
		return err
	}
	defer admin.Close()
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return err
}

// Postgres opens a fresh, migrated PostgreSQL database for this test.
func Postgres(tb testing.TB) *db.DB {
	tb.Helper()
	return open(tb, PostgresURL(tb))
}

// SQLiteURL creates a fresh, migrated SQLite database file in the test's
// temporary directory and returns its sqlite:// URL.
func SQLiteURL(tb testing.TB) string {
	tb.Helper()
	raw := "sqlite://" + filepath.Join(tb.TempDir(), "ticketd.db")
	d := open(tb, raw)
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := migrations.Up(context.Background(), sqlDB, "sqlite"); err != nil {
		tb.Fatalf("migrate sqlite: %v", err)
	}
	return raw
}

// SQLite opens a fresh, migrated SQLite database for this test.
func SQLite(tb testing.TB) *db.DB {
	tb.Helper()
	return open(tb, SQLiteURL(tb))
}

// Dialects runs f once per supported engine, as parallel subtests named
// "postgres" and "sqlite", each with a database of its own.
func Dialects(t *testing.T, f func(t *testing.T, d *db.DB)) {
	t.Helper()
	for _, dialect := range []db.Dialect{db.Postgres, db.SQLite} {
		t.Run(string(dialect), func(t *testing.T) {
			t.Parallel()
			if dialect == db.Postgres {
				f(t, Postgres(t))
				return
			}
			f(t, SQLite(t))
		})
	}
}

func open(tb testing.TB, rawURL string) *db.DB {
	tb.Helper()
	d, err := db.Open(context.Background(), rawURL)
	if err != nil {
		tb.Fatalf("open %s: %v", rawURL, err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}

func migrate(ctx context.Context, driver, dsn, dialect string) error {
	conn, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := migrations.Up(ctx, conn, dialect); err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	return nil
}

// PostgresCommit is PostgreSQL's simple-query message for COMMIT as pgx
// sends it ('Q', int32 length 11, "commit\0"): the marker for a
// faultproxy that must lose the connection exactly at commit time.
const PostgresCommit = "Q\x00\x00\x00\x0bcommit\x00"

// PostgresStatementEnd is how pgx ends an extended-protocol query, an
// Execute of the unnamed portal with no row limit and then Sync ('E', int32
// length 9, "\0", int32 0; 'S', int32 length 4): where PostgreSQL commits a
// statement that runs outside a transaction block, whose reply is then the
// reply to its commit. A faultproxy loses that reply with
// DropReplyAfter(arg, PostgresStatementEnd), arg being text only that
// statement carries among its arguments (its Bind message comes just before
// the Execute; its SQL text, sent once per connection when pgx prepares it,
// would match the preparation instead).
const PostgresStatementEnd = "E\x00\x00\x00\x09\x00\x00\x00\x00\x00S\x00\x00\x00\x04"

// PostgresViaProxy opens a fresh, migrated PostgreSQL database whose every
// connection runs through a fault proxy, so a test can cut it at a chosen
// moment (typically DropReplyAfter(PostgresCommit), or for a write that
// commits in one statement DropReplyAfter(arg, PostgresStatementEnd)).
func PostgresViaProxy(tb testing.TB) (*db.DB, *faultproxy.Proxy) {
	tb.Helper()
	return PostgresViaProxyWith(tb, db.Options{})
}

// PostgresViaProxyWith is PostgresViaProxy with the database opened with
// opts, for a test of the session limits.
func PostgresViaProxyWith(tb testing.TB, opts db.Options) (*db.DB, *faultproxy.Proxy) {
	tb.Helper()
	u, err := url.Parse(PostgresURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	proxy := faultproxy.Start(tb, u.Host)
	u.Host = proxy.Addr()
	d, err := db.OpenWith(context.Background(), u.String(), opts)
	if err != nil {
		tb.Fatalf("open %s: %v", u.Redacted(), err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d, proxy
}

// CountRows returns how many rows of table belong to tenant, or with tenant
// "" how many it holds in all (for a table without tenants, such as River's
// river_job), read straight from the database so a test's count does not
// depend on the code under test.
func CountRows(tb testing.TB, d *db.DB, table, tenant string) int64 {
	tb.Helper()
	q := d.Gorm.Table(table)
	if tenant != "" {
		q = q.Where("tenant_id = ?", tenant)
	}
	var n int64
	if err := q.Count(&n).Error; err != nil {
		tb.Fatalf("count %s of %q: %v", table, tenant, err)
	}
	return n
}
