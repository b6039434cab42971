package db

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the closed standby's driver
)

func TestParseLSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"0/0", 0},
		{"0/30000D8", 0x30000D8},
		{"16/B374D848", 0x16<<32 | 0xB374D848},
		{"FFFFFFFF/FFFFFFFF", 1<<64 - 1},
	} {
		got, err := parseLSN(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseLSN(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "30000D8", "0/", "x/1", "1/100000000"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) succeeded, want an error", bad)
		}
	}
}

// A read replica is a PostgreSQL standby: SQLite has none, so asking for one
// fails before anything connects.
func TestAttachReplicaNeedsPostgres(t *testing.T) {
	t.Parallel()
	d, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.AttachReplica(context.Background(), "postgres://127.0.0.1:1/x"); !errors.Is(err, ErrReplicaNotPostgres) {
		t.Fatalf("AttachReplica on SQLite: %v, want ErrReplicaNotPostgres", err)
	}
	if d.Replica != nil {
		t.Fatal("a failed AttachReplica left a replica attached")
	}
}

// A standby that cannot answer sends the reads to the primary, which
// answers them, and is left alone for standbyRetryAfter rather than asked
// again (and waited for) on every read.
func TestReadsFallBackToThePrimaryWhenTheStandbyIsDown(t *testing.T) {
	t.Parallel()
	primary := openTestPostgres(t)
	primarySQL, err := primary.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	standby, err := sql.Open("pgx", "postgres://postgres@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	_ = standby.Close() // every query on it fails at once
	pool := &routingPool{primary: primarySQL, standby: standby}
	for i := range 3 {
		var one int
		if err := pool.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
			t.Fatalf("read %d with the standby down: %d, %v; want the primary's answer", i, one, err)
		}
	}
	if onStandby, onPrimary := pool.onStandby.Load(), pool.onPrimary.Load(); onStandby != 0 || onPrimary != 3 {
		t.Fatalf("served %d on the standby and %d on the primary, want 0 and 3", onStandby, onPrimary)
	}
	if until := time.Unix(0, pool.standbyDownUntil.Load()); time.Until(until) <= 0 || time.Until(until) > standbyRetryAfter {
		t.Fatalf("standby skipped until %s, want within %s from now", until, standbyRetryAfter)
	}
}

// openTestPostgres opens the PostgreSQL server the tests use (dbtest's
// variable; dbtest itself imports this package), for queries that touch no
// table.
func openTestPostgres(tb testing.TB) *DB {
	tb.Helper()
	d, err := Open(context.Background(), testPostgresURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}

// testPostgresURL is the URL of the PostgreSQL server the tests use; a test
// that needs it is skipped without one.
func testPostgresURL(tb testing.TB) string {
	tb.Helper()
	raw := os.Getenv("TICKETD_TEST_DATABASE_URL")
	if raw == "" {
		if os.Getenv("TICKETD_REQUIRE_POSTGRES") != "" {
			tb.Fatal("TICKETD_REQUIRE_POSTGRES is set but TICKETD_TEST_DATABASE_URL is not")
		}
		tb.Skip("PostgreSQL tests need TICKETD_TEST_DATABASE_URL (make test sets it)")
	}
	return raw
}
