package db_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
)

// SQLite write transactions queue in the process: a second writer waits
// for the first to end (not for SQLite's busy handler, whose timeout is
// 10 s: it would fail with SQLITE_BUSY, not with its own deadline), readers
// do not wait at all, and a transaction that ends by rollback, commit or
// its context gives the turn to the next writer at once.
func TestSQLiteWritersTakeTurns(t *testing.T) {
	t.Parallel()
	sqlDB, err := dbtest.SQLite(t).Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := sqlDB.ExecContext(ctx, `CREATE TABLE turns (n integer)`); err != nil {
		t.Fatal(err)
	}
	firstCtx, endFirst := context.WithCancel(ctx)
	first, err := sqlDB.BeginTx(firstCtx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.ExecContext(firstCtx, `INSERT INTO turns VALUES (1)`); err != nil {
		t.Fatal(err)
	}

	waitCtx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if tx, err := sqlDB.BeginTx(waitCtx, nil); !errors.Is(err, context.DeadlineExceeded) {
		if tx != nil {
			_ = tx.Rollback()
		}
		t.Fatalf("second writer while the first is open: %v, want its own deadline", err)
	}
	var n int
	if err := sqlDB.QueryRowContext(ctx, `SELECT count(*) FROM turns`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("reader while a writer is open: %d rows, %v; want 0 (the write is not committed)", n, err)
	}

	// Ended by its context, as database/sql ends a transaction whose
	// caller went away: the turn passes on.
	endFirst()
	second := beginWithin(t, sqlDB, 5*time.Second)
	if _, err := second.ExecContext(ctx, `INSERT INTO turns VALUES (2)`); err != nil {
		t.Fatal(err)
	}
	if err := second.Commit(); err != nil {
		t.Fatal(err)
	}
	third := beginWithin(t, sqlDB, 5*time.Second)
	if err := third.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := sqlDB.QueryRowContext(ctx, `SELECT coalesce(sum(n), 0) FROM turns`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("after the turns: sum %d, %v; want 2 (the cancelled first write rolled back)", n, err)
	}
}

// beginWithin begins a write transaction, failing the test if its turn
// does not come within d (nor may the transaction take longer).
func beginWithin(t *testing.T, sqlDB *sql.DB, d time.Duration) *sql.Tx {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	tx, err := sqlDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	return tx
}
