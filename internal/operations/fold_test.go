package operations_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
)

// insertProjectFolded is insertProject as a folded write: on PostgreSQL one
// statement claims the key and, only when the claim won, inserts the row.
func insertProjectFolded(id string) operations.FoldedWriteFunc {
	return func(tx *gorm.DB, fold *operations.Fold) error {
		if !fold.Inline() {
			return insertProject(id)(tx)
		}
		args := map[string]any{"id": id, "key": strings.ToUpper(id), "now": time.Now().UTC()}
		fold.Args(args)
		var won bool
		err := tx.Raw(`WITH `+operations.ClaimWith+`, p AS (
	INSERT INTO projects (tenant_id, id, key, name, created_at)
	SELECT 'acme', @id, @key, @id, CAST(@now AS timestamptz) WHERE `+operations.ClaimWon+`
)
SELECT `+operations.ClaimWon, args).Row().Scan(&won)
		fold.Report(won, err)
		return err
	}
}

func runFolded(l *operations.Ledger, key operations.Key, resultID string, write operations.FoldedWriteFunc) (operations.Outcome, error) {
	return l.RunFolded(context.Background(), key, fingerprintA, resultID, nil, operations.Replay{}, write)
}

func TestRunFoldedRecordsReplaysAndConflicts(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		first, err := runFolded(l, key, "p1", insertProjectFolded("p1"))
		if err != nil || first.Replayed || first.Record.Status != operations.StatusSucceeded || first.Record.ResultID != "p1" {
			t.Fatalf("first = %+v, %v", first, err)
		}
		again, err := runFolded(l, key, "p2", insertProjectFolded("p2"))
		if err != nil || !again.Replayed || again.Record.ResultID != "p1" {
			t.Errorf("again = %+v, %v; want a replay of p1", again, err)
		}
		_, err = l.RunFolded(context.Background(), key, "other", "p3", nil, operations.Replay{}, insertProjectFolded("p3"))
		if !errors.Is(err, operations.ErrConflict) {
			t.Errorf("other fingerprint: %v, want ErrConflict", err)
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 1 {
			t.Errorf("%d writes committed, want 1", n)
		}
	})
}

func TestRunFoldedFailingWriteRollsBackTheClaim(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		boom := errors.New("boom")
		_, err := runFolded(l, key, "p1", func(tx *gorm.DB, fold *operations.Fold) error {
			if err := insertProjectFolded("p1")(tx, fold); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the write's", err)
		}
		if _, err := l.Lookup(context.Background(), key); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("lookup after a failed write: %v, want ErrNotFound", err)
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 0 {
			t.Errorf("%d rows committed, want 0", n)
		}
	})
}

// TestRunFoldedFailingConsumeRollsBackTheWrite: the gate's consuming step
// (an approval used up meanwhile, say) runs once the key is this call's,
// after the folded write on PostgreSQL and before it elsewhere; when it
// fails, the write and the claim roll back together and the key stays
// usable.
func TestRunFoldedFailingConsumeRollsBackTheWrite(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		usedUp := errors.New("approval already used")
		gate := func(context.Context) (operations.WriteFunc, error) {
			return func(*gorm.DB) error { return usedUp }, nil
		}
		_, err := l.RunFolded(context.Background(), key, fingerprintA, "p1", gate, operations.Replay{}, insertProjectFolded("p1"))
		if !errors.Is(err, usedUp) {
			t.Fatalf("err = %v, want the consuming step's", err)
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 0 {
			t.Errorf("%d rows committed after the consuming step failed, want 0", n)
		}
		if again, err := runFolded(l, key, "p1", insertProjectFolded("p1")); err != nil || again.Replayed {
			t.Errorf("retry with the same key = %+v, %v; want a first execution", again, err)
		}
	})
}

// TestRunFoldedWriteMustRunItsClaim: an inline write that returns without
// reporting its claim committed nothing, so the ledger refuses to commit.
func TestRunFoldedWriteMustRunItsClaim(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	key := newKey()
	if _, err := runFolded(l, key, "p1", func(*gorm.DB, *operations.Fold) error { return nil }); err == nil {
		t.Fatal("a write that never ran its claim succeeded")
	}
	if _, err := l.Lookup(context.Background(), key); !errors.Is(err, operations.ErrNotFound) {
		t.Errorf("lookup: %v, want ErrNotFound", err)
	}
}

// TestRunFoldedConcurrentHolderIsInProgress: the inline claim waits at most
// the lock timeout for a call holding the key, answers in progress, and
// replays the holder's result once it committed.
func TestRunFoldedConcurrentHolderIsInProgress(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	l := operations.NewLedger(d.Gorm, operations.Options{LockTimeout: 200 * time.Millisecond})
	key := newKey()
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := runFolded(l, key, "slow", func(tx *gorm.DB, fold *operations.Fold) error {
			if err := insertProjectFolded("slow")(tx, fold); err != nil {
				return err
			}
			close(entered)
			<-release
			return nil
		})
		done <- err
	}()
	<-entered
	out, err := runFolded(l, key, "dup", insertProjectFolded("dup"))
	if !errors.Is(err, operations.ErrInProgress) || out.Record.Status != operations.StatusPending {
		t.Errorf("concurrent call = %+v, %v; want ErrInProgress with status pending", out, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("holder: %v", err)
	}
	out, err = runFolded(l, key, "dup", insertProjectFolded("dup"))
	if err != nil || !out.Replayed || out.Record.ResultID != "slow" {
		t.Errorf("after the holder committed = %+v, %v; want replay", out, err)
	}
	if n := dbtest.CountRows(t, d, "projects", ""); n != 1 {
		t.Errorf("%d writes committed, want 1", n)
	}
}

// TestRunFoldedWaiterFollowsTheHolder: a call parked behind a holder of the
// same key replays the holder's result when it commits (its statement wrote
// nothing), and takes over the key when it rolls back.
func TestRunFoldedWaiterFollowsTheHolder(t *testing.T) {
	waiterFollowsHolder(t, func(l *operations.Ledger, key operations.Key, id string, during func() error) (operations.Outcome, error) {
		return runFolded(l, key, id, func(tx *gorm.DB, fold *operations.Fold) error {
			if err := insertProjectFolded(id)(tx, fold); err != nil {
				return err
			}
			return during()
		})
	})
}
