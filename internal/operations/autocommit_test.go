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

// insertProjectAlone is insertProjectFolded as one statement outside a
// transaction: the claim, gated on can, and the row. It declines, having
// written nothing, when the statement found can false.
func insertProjectAlone(id string, can bool) operations.AutocommitFunc {
	return func(db *gorm.DB, fold *operations.Fold) (bool, error) {
		args := map[string]any{"id": id, "key": strings.ToUpper(id), "now": time.Now().UTC(), "can": can}
		fold.Args(args)
		var won, could bool
		err := db.Raw(`WITH `+operations.ClaimWithIf(`CAST(@can AS boolean)`)+`, p AS (
	INSERT INTO projects (tenant_id, id, key, name, created_at)
	SELECT 'acme', @id, @key, @id, CAST(@now AS timestamptz) WHERE `+operations.ClaimWon+`
)
SELECT `+operations.ClaimWon+`, CAST(@can AS boolean)`, args).Row().Scan(&won, &could)
		fold.Report(won, err)
		return could || err != nil, err
	}
}

func runAutocommit(l *operations.Ledger, key operations.Key, resultID string, single operations.AutocommitFunc) (operations.Outcome, error) {
	return l.RunAutocommit(context.Background(), key, fingerprintA, resultID, nil, operations.Replay{}, single, insertProjectFolded(resultID))
}

// TestRunAutocommitIsOneStatement: on PostgreSQL a first execution is the
// fast path and the one statement, no BEGIN or COMMIT, and commits record
// and row together; a replay and a conflict are answered as RunFolded's.
func TestRunAutocommitIsOneStatement(t *testing.T) {
	t.Parallel()
	d, trips := dbtest.PostgresCounted(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	if _, err := runAutocommit(l, newKey(), "warm", insertProjectAlone("warm", true)); err != nil {
		t.Fatal(err) // statements are prepared on first use
	}
	key := newKey()
	before := trips.Count()
	first, err := runAutocommit(l, key, "p1", insertProjectAlone("p1", true))
	if err != nil || first.Replayed || first.Record.Status != operations.StatusSucceeded || first.Record.ResultID != "p1" {
		t.Fatalf("first = %+v, %v", first, err)
	}
	if n := trips.Count() - before; n != 2 {
		t.Errorf("a first execution took %d round trips, want 2 (the fast path, the statement)", n)
	}
	again, err := runAutocommit(l, key, "p2", insertProjectAlone("p2", true))
	if err != nil || !again.Replayed || again.Record.ResultID != "p1" {
		t.Errorf("again = %+v, %v; want a replay of p1", again, err)
	}
	_, err = l.RunAutocommit(context.Background(), key, "other", "p3", nil, operations.Replay{}, insertProjectAlone("p3", true), insertProjectFolded("p3"))
	if !errors.Is(err, operations.ErrConflict) {
		t.Errorf("other fingerprint: %v, want ErrConflict", err)
	}
	if n := dbtest.CountRows(t, d, "projects", ""); n != 2 {
		t.Errorf("%d rows committed, want 2 (warm and p1)", n)
	}
}

// TestRunAutocommitDeclinedRunsTheWrite: a statement that finds it cannot
// go alone writes nothing, claim included, and the write then runs in a
// transaction (BEGIN and COMMIT back); on SQLite the write always does.
func TestRunAutocommitDeclinedRunsTheWrite(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		singles := 0
		out, err := runAutocommit(l, key, "p1", func(db *gorm.DB, fold *operations.Fold) (bool, error) {
			singles++
			return insertProjectAlone("p1", false)(db, fold)
		})
		if err != nil || out.Replayed || out.Record.ResultID != "p1" {
			t.Fatalf("out = %+v, %v", out, err)
		}
		if want := map[db.Dialect]int{db.Postgres: 1, db.SQLite: 0}[d.Dialect]; singles != want {
			t.Errorf("the one statement was tried %d times, want %d", singles, want)
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 1 {
			t.Errorf("%d rows committed, want 1", n)
		}
		if again, err := runAutocommit(l, key, "p1", insertProjectAlone("p1", true)); err != nil || !again.Replayed {
			t.Errorf("retry = %+v, %v; want a replay", again, err)
		}
	})
}

// TestRunAutocommitGateStepRunsInATransaction: a gate's consuming step
// must commit with the write, so the one statement is not tried.
func TestRunAutocommitGateStepRunsInATransaction(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	consumed := false
	gate := func(context.Context) (operations.WriteFunc, error) {
		return func(tx *gorm.DB) error {
			consumed = true
			return insertProject("approval")(tx)
		}, nil
	}
	single := func(*gorm.DB, *operations.Fold) (bool, error) {
		t.Error("the one statement ran though the gate has a step")
		return false, nil
	}
	out, err := l.RunAutocommit(context.Background(), newKey(), fingerprintA, "p1", gate, operations.Replay{}, single, insertProjectFolded("p1"))
	if err != nil || out.Record.ResultID != "p1" || !consumed {
		t.Fatalf("out = %+v, %v, consumed %v", out, err, consumed)
	}
	if n := dbtest.CountRows(t, d, "projects", ""); n != 2 {
		t.Errorf("%d rows committed, want 2 (the write and the gate's step)", n)
	}
}

// TestRunAutocommitFailedStatementCommitsNothing: a statement PostgreSQL
// refuses (here a duplicate row) rolls back its claim with it: the error
// is the write's, never outcome unknown, and the key stays usable.
func TestRunAutocommitFailedStatementCommitsNothing(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	if _, err := runAutocommit(l, newKey(), "taken", insertProjectAlone("taken", true)); err != nil {
		t.Fatal(err)
	}
	key := newKey()
	_, err := runAutocommit(l, key, "taken", insertProjectAlone("taken", true))
	if err == nil || errors.Is(err, operations.ErrOutcomeUnknown) || errors.Is(err, operations.ErrInProgress) {
		t.Fatalf("err = %v, want the statement's own error", err)
	}
	if _, err := l.Lookup(context.Background(), key); !errors.Is(err, operations.ErrNotFound) {
		t.Errorf("lookup after a refused statement: %v, want ErrNotFound", err)
	}
	if out, err := runAutocommit(l, key, "free", insertProjectAlone("free", true)); err != nil || out.Replayed {
		t.Errorf("retry with the same key = %+v, %v; want a first execution", out, err)
	}
}

// TestRunAutocommitBehindAHolder: the claim's lock timeout applies to a
// statement outside a transaction (set_config's is_local lasts for it): a
// holder of the key that stays past it is in progress; one that commits
// within it is replayed, and one that rolls back leaves the waiter the key.
// Either way the waiter's session keeps its own lock_timeout: the claim's
// ended with its statement.
func TestRunAutocommitBehindAHolder(t *testing.T) {
	t.Parallel()
	for _, end := range []string{"StaysPastTheTimeout", "Commits", "RollsBack"} {
		t.Run(end, func(t *testing.T) {
			t.Parallel()
			url := dbtest.PostgresURL(t)
			holderDB, waiterDB := openDB(t, url), openDB(t, url)
			pool, err := waiterDB.Gorm.DB()
			if err != nil {
				t.Fatal(err)
			}
			pool.SetMaxOpenConns(1) // SHOW lock_timeout below reads the waiter's session
			timeout := 10 * time.Second
			if end == "StaysPastTheTimeout" {
				timeout = 200 * time.Millisecond
			}
			holder := operations.NewLedger(holderDB.Gorm, operations.Options{})
			waiter := operations.NewLedger(waiterDB.Gorm, operations.Options{LockTimeout: timeout})
			key := newKey()
			entered, release := make(chan struct{}), make(chan struct{})
			holderDone := make(chan error, 1)
			go func() {
				_, err := runFolded(holder, key, "holder", func(tx *gorm.DB, fold *operations.Fold) error {
					if err := insertProjectFolded("holder")(tx, fold); err != nil {
						return err
					}
					close(entered)
					<-release
					if end == "RollsBack" {
						return errors.New("holder's write failed")
					}
					return nil
				})
				holderDone <- err
			}()
			<-entered
			type result struct {
				out   operations.Outcome
				err   error
				after time.Duration
			}
			waited := make(chan result, 1)
			go func() {
				started := time.Now()
				out, err := runAutocommit(waiter, key, "waiter", insertProjectAlone("waiter", true))
				waited <- result{out, err, time.Since(started)}
			}()
			if end != "StaysPastTheTimeout" {
				waitForLockWaiter(t, holderDB)
			}
			var got result
			if end == "StaysPastTheTimeout" {
				got = <-waited
				close(release)
			} else {
				close(release)
				got = <-waited
			}
			switch end {
			case "StaysPastTheTimeout":
				if !errors.Is(got.err, operations.ErrInProgress) || got.after > 5*time.Second {
					t.Errorf("behind a holder past the timeout: %+v, %v after %v; want ErrInProgress within it", got.out, got.err, got.after)
				}
			case "Commits":
				if got.err != nil || !got.out.Replayed || got.out.Record.ResultID != "holder" {
					t.Errorf("waiter = %+v, %v; want a replay of the holder's result", got.out, got.err)
				}
			case "RollsBack":
				if got.err != nil || got.out.Replayed || got.out.Record.ResultID != "waiter" {
					t.Errorf("waiter = %+v, %v; want its own fresh result", got.out, got.err)
				}
			}
			if err := <-holderDone; (err != nil) != (end == "RollsBack") {
				t.Fatalf("holder: %v", err)
			}
			var lockTimeout string
			if err := waiterDB.Gorm.Raw(`SHOW lock_timeout`).Scan(&lockTimeout).Error; err != nil || lockTimeout != "0" {
				t.Errorf("the waiter's session lock_timeout = %q, %v; want the server's default 0", lockTimeout, err)
			}
			if n := dbtest.CountRows(t, holderDB, "projects", ""); n != 1 {
				t.Errorf("%d rows committed, want 1", n)
			}
		})
	}
}

func openDB(tb testing.TB, url string) *db.DB {
	tb.Helper()
	d, err := db.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = d.Close() })
	return d
}
