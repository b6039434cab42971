package operations_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
)

const fingerprintA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

func newKey() operations.Key {
	return operations.Key{Tenant: "acme", Action: "create_widget", OperationID: uuid.New()}
}

// insertProject is a stand-in side effect: the ledger is generic, so any row
// written through tx proves whether the write committed.
func insertProject(id string) operations.WriteFunc {
	return func(tx *gorm.DB) error {
		return tx.Exec(`INSERT INTO projects (tenant_id, id, key, name, created_at) VALUES (?, ?, ?, ?, ?)`,
			"acme", id, strings.ToUpper(id), id, time.Now().UTC()).Error
	}
}

func TestRunRecordsAndReplays(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		first, err := l.Run(ctx, key, fingerprintA, "p1", insertProject("p1"))
		if err != nil || first.Replayed || first.Record.Status != operations.StatusSucceeded || first.Record.ResultID != "p1" {
			t.Fatalf("first run = %+v, %v", first, err)
		}
		calls := 0
		second, err := l.Run(ctx, key, fingerprintA, "p2", func(*gorm.DB) error { calls++; return nil })
		if err != nil || !second.Replayed || second.Record.ResultID != "p1" || calls != 0 {
			t.Fatalf("replay = %+v, %v (write ran %d times)", second, err, calls)
		}
		got, err := l.Lookup(ctx, key)
		if err != nil || got.Status != operations.StatusSucceeded || got.Fingerprint != fingerprintA || got.CreatedAt.IsZero() {
			t.Errorf("lookup = %+v, %v", got, err)
		}
		other := key
		other.Action = "delete_widget"
		if _, err := l.Lookup(ctx, other); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("lookup under another action = %v, want ErrNotFound", err)
		}
	})
}

func TestRunFailingWriteRollsBackEverything(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		boom := errors.New("downstream refused")
		_, err := l.Run(ctx, key, fingerprintA, "half", func(tx *gorm.DB) error {
			if err := insertProject("half")(tx); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want the write's error", err)
		}
		if n := dbtest.CountRows(t, d, "projects", "") + dbtest.CountRows(t, d, "operations", ""); n != 0 {
			t.Fatalf("%d rows survived a failed write, want 0", n)
		}
		if _, err := l.Run(ctx, key, fingerprintA, "whole", insertProject("whole")); err != nil {
			t.Fatalf("the same key after a rolled-back write: %v", err)
		}
	})
}

func TestRunPanickingWriteRollsBack(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		func() {
			defer func() {
				if recover() == nil {
					t.Error("the write's panic was swallowed")
				}
			}()
			_, _ = l.Run(context.Background(), newKey(), fingerprintA, "half", func(tx *gorm.DB) error {
				if err := insertProject("half")(tx); err != nil {
					return err
				}
				panic("bug in write")
			})
		}()
		if n := dbtest.CountRows(t, d, "projects", "") + dbtest.CountRows(t, d, "operations", ""); n != 0 {
			t.Errorf("%d rows survived a panicking write, want 0", n)
		}
	})
}

func TestRunConflictDoesNotWrite(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		if _, err := l.Run(ctx, key, fingerprintA, "p1", insertProject("p1")); err != nil {
			t.Fatal(err)
		}
		out, err := l.Run(ctx, key, strings.Repeat("b", 64), "p2", insertProject("p2"))
		if !errors.Is(err, operations.ErrConflict) || out.Record.ResultID != "p1" {
			t.Fatalf("run = %+v, %v; want ErrConflict naming the first result", out, err)
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 1 {
			t.Errorf("%d projects, want 1", n)
		}
	})
}

// TestRunSurvivesCallerCancellation proves writes are detached from the
// caller: a client that disconnects mid-write must not leave it half done,
// and its retry must find the committed result.
func TestRunSurvivesCallerCancellation(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key := newKey()
		ctx, cancel := context.WithCancel(context.Background())
		_, err := l.Run(ctx, key, fingerprintA, "p1", func(tx *gorm.DB) error {
			cancel() // the caller goes away in the middle of the write
			return insertProject("p1")(tx)
		})
		if err != nil {
			t.Fatalf("run with a cancelled caller: %v", err)
		}
		out, err := l.Run(context.Background(), key, fingerprintA, "p2", insertProject("p2"))
		if err != nil || !out.Replayed || out.Record.ResultID != "p1" {
			t.Errorf("retry = %+v, %v; want replay of p1", out, err)
		}
	})
}

func TestRunConcurrentHolderIsInProgress(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	ctx := context.Background()
	l := operations.NewLedger(d.Gorm, operations.Options{LockTimeout: 200 * time.Millisecond})
	key := newKey()

	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Run(ctx, key, fingerprintA, "slow", func(tx *gorm.DB) error {
			close(entered)
			<-release
			return insertProject("slow")(tx)
		})
		done <- err
	}()
	<-entered
	out, err := l.Run(ctx, key, fingerprintA, "dup", insertProject("dup"))
	if !errors.Is(err, operations.ErrInProgress) || out.Record.Status != operations.StatusPending {
		t.Errorf("concurrent call = %+v, %v; want ErrInProgress with status pending", out, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("holder: %v", err)
	}
	out, err = l.Run(ctx, key, fingerprintA, "dup", insertProject("dup"))
	if err != nil || !out.Replayed || out.Record.ResultID != "slow" {
		t.Errorf("after the holder committed = %+v, %v; want replay", out, err)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		const total = 5
		for i := range total {
			if _, err := l.Run(ctx, newKey(), fingerprintA, "p"+string(rune('a'+i)), insertProject("p"+string(rune('a'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		var seen []string
		var after *operations.Position
		for range total + 1 {
			page, err := l.List(ctx, "acme", operations.StatusSucceeded, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, r := range page {
				seen = append(seen, r.ResultID)
			}
			last := page[len(page)-1]
			after = &operations.Position{CreatedAt: last.CreatedAt, Action: last.Action, OperationID: last.OperationID.String()}
		}
		if strings.Join(seen, ",") != "pe,pd,pc,pb,pa" {
			t.Errorf("pages = %v, want newest first without gaps or repeats", seen)
		}
		if other, err := l.List(ctx, "globex", "", nil, 10); err != nil || len(other) != 0 {
			t.Errorf("another tenant's list = %v, %v", other, err)
		}
	})
}

// TestRunAnswersRecordedStatesHonestly: only a success is replayed. A record
// an operator marked failed or unknown while reconciling is reported as such,
// and the write never runs again.
func TestRunAnswersRecordedStatesHonestly(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		for status, want := range map[operations.Status]error{
			operations.StatusFailed:  operations.ErrFailed,
			operations.StatusUnknown: operations.ErrOutcomeUnknown,
			operations.StatusPending: operations.ErrInProgress,
		} {
			key := newKey()
			now := time.Now().UTC()
			if err := d.Gorm.Exec(`INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, error, created_at, updated_at)
				VALUES (?, ?, ?, ?, ?, 'downstream refused', ?, ?)`, key.Tenant, key.Action, key.OperationID.String(), fingerprintA, string(status), now, now).Error; err != nil {
				t.Fatal(err)
			}
			out, err := l.Run(ctx, key, fingerprintA, "p", insertProject("p-"+string(status)))
			if !errors.Is(err, want) || out.Replayed {
				t.Errorf("record %s: Run = %+v, %v; want %v and no replay", status, out, err, want)
			}
		}
		if n := dbtest.CountRows(t, d, "projects", ""); n != 0 {
			t.Errorf("the write ran %d times for recorded keys, want 0", n)
		}
	})
}

// waitForLockWaiter polls until some session of this database waits on a
// lock: the concurrent call is parked on the claim, not still on its way.
func waitForLockWaiter(tb testing.TB, d *db.DB) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := d.Gorm.Raw(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = current_setting('application_name') AND wait_event_type = 'Lock'`).Scan(&n).Error; err != nil {
			tb.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatal("no session ever waited on the claim")
}

// TestRunWaiterFollowsTheHolder pins both ends of the claim race on
// PostgreSQL: a call parked behind a holder of the same key replays the
// holder's result when it commits, and takes over the key when it rolls back.
func TestRunWaiterFollowsTheHolder(t *testing.T) {
	waiterFollowsHolder(t, func(l *operations.Ledger, key operations.Key, id string, during func() error) (operations.Outcome, error) {
		return l.Run(context.Background(), key, fingerprintA, id, func(tx *gorm.DB) error {
			if err := insertProject(id)(tx); err != nil {
				return err
			}
			return during()
		})
	})
}

// claimRacer writes project id under key, calling during once the write
// holds the key (its claim is in, uncommitted), and answers what the ledger
// answered.
type claimRacer func(l *operations.Ledger, key operations.Key, id string, during func() error) (operations.Outcome, error)

// waiterFollowsHolder races a waiter against a holder of its key, both
// writing with run: the holder pauses inside its write until the waiter is
// parked on the key, then commits or fails.
func waiterFollowsHolder(t *testing.T, run claimRacer) {
	t.Parallel()
	for name, holderFails := range map[string]bool{"HolderCommits": false, "HolderRollsBack": true} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := dbtest.Postgres(t)
			l := operations.NewLedger(d.Gorm, operations.Options{LockTimeout: 10 * time.Second})
			key := newKey()
			entered, release := make(chan struct{}), make(chan struct{})
			holderDone := make(chan error, 1)
			go func() {
				_, err := run(l, key, "holder", func() error {
					close(entered)
					<-release
					if holderFails {
						return errors.New("holder's write failed")
					}
					return nil
				})
				holderDone <- err
			}()
			<-entered
			type result struct {
				out operations.Outcome
				err error
			}
			waiter := make(chan result, 1)
			go func() {
				out, err := run(l, key, "waiter", func() error { return nil })
				waiter <- result{out, err}
			}()
			waitForLockWaiter(t, d)
			close(release)
			if err := <-holderDone; (err != nil) != holderFails {
				t.Fatalf("holder: %v", err)
			}
			got := <-waiter
			switch {
			case got.err != nil:
				t.Fatalf("waiter: %v", got.err)
			case !holderFails && (!got.out.Replayed || got.out.Record.ResultID != "holder"):
				t.Errorf("waiter = %+v; want a replay of the holder's result", got.out)
			case holderFails && (got.out.Replayed || got.out.Record.ResultID != "waiter"):
				t.Errorf("waiter = %+v; want its own fresh result", got.out)
			}
			if n := dbtest.CountRows(t, d, "projects", ""); n != 1 {
				t.Errorf("%d writes committed, want 1", n)
			}
		})
	}
}

// TestRunWriteTimeoutRollsBack: a write that outlives Options.WriteTimeout is
// abandoned and rolled back, never left half done, and the key stays usable.
func TestRunWriteTimeoutRollsBack(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		l := operations.NewLedger(d.Gorm, operations.Options{WriteTimeout: 200 * time.Millisecond})
		key := newKey()
		_, err := l.Run(context.Background(), key, fingerprintA, "slow", func(tx *gorm.DB) error {
			time.Sleep(400 * time.Millisecond) // past the write timeout
			return insertProject("slow")(tx)
		})
		if err == nil || errors.Is(err, operations.ErrOutcomeUnknown) {
			t.Fatalf("err = %v, want a definite failure", err)
		}
		if n := dbtest.CountRows(t, d, "projects", "") + dbtest.CountRows(t, d, "operations", ""); n != 0 {
			t.Fatalf("%d rows survived a timed-out write, want 0", n)
		}
		// The retry gets the default write timeout: on a loaded machine a
		// whole write can outlast the tight one above, which bounds only the
		// write under test.
		retry := operations.NewLedger(d.Gorm, operations.Options{})
		if _, err := retry.Run(context.Background(), key, fingerprintA, "fast", insertProject("fast")); err != nil {
			t.Errorf("the key after a timed-out write: %v", err)
		}
	})
}

// TestRunReplayingReadsTheResultWithTheRecord: a replay gets its result row
// from the fast path's one query. A first run, a conflict, and a record
// whose result row is gone report none read.
func TestRunReplayingReadsTheResultWithTheRecord(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		idType := "uuid"
		if d.Dialect == db.SQLite {
			idType = "text"
		}
		if err := d.Gorm.Exec(`CREATE TABLE widgets (tenant_id text NOT NULL, id ` + idType + ` NOT NULL, name text NOT NULL,
			PRIMARY KEY (tenant_id, id))`).Error; err != nil {
			t.Fatal(err)
		}
		join := operations.NewJoin("widgets", []string{"id", "name"})
		l := operations.NewLedger(d.Gorm, operations.Options{})
		key, widget := newKey(), uuid.NewString()
		var id, name string
		replay := operations.Replay{Join: join, Into: []any{&id, &name}}
		write := func(tx *gorm.DB) error {
			return tx.Exec(`INSERT INTO widgets (tenant_id, id, name) VALUES (?, ?, ?)`, "acme", widget, "gear").Error
		}
		first, err := l.RunReplaying(ctx, key, fingerprintA, widget, nil, replay, write)
		if err != nil || first.Replayed || first.ResultRead || name != "" {
			t.Fatalf("first run = %+v, %v (name %q)", first, err, name)
		}
		again, err := l.RunReplaying(ctx, key, fingerprintA, uuid.NewString(), nil, replay, write)
		if err != nil || !again.Replayed || !again.ResultRead || again.Record.ResultID != widget {
			t.Fatalf("replay = %+v, %v; want a replay of %s, its result read", again, err, widget)
		}
		if id != widget || name != "gear" {
			t.Fatalf("replay read %q %q, want %q %q", id, name, widget, "gear")
		}
		conflict, err := l.RunReplaying(ctx, key, strings.Repeat("b", 64), widget, nil, replay, write)
		if !errors.Is(err, operations.ErrConflict) || conflict.ResultRead {
			t.Fatalf("conflict = %+v, %v", conflict, err)
		}
		if err := d.Gorm.Exec(`DELETE FROM widgets`).Error; err != nil {
			t.Fatal(err)
		}
		gone, err := l.RunReplaying(ctx, key, fingerprintA, widget, nil, replay, write)
		if err != nil || !gone.Replayed || gone.ResultRead || gone.Record.ResultID != widget {
			t.Fatalf("replay without its result row = %+v, %v", gone, err)
		}
	})
}
