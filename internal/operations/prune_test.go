package operations_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
)

// insertRecord writes a record with the given status and updated_at directly,
// as an old ledger (or an operator reconciling) would have left it.
func insertRecord(tb testing.TB, d *db.DB, tenant string, status operations.Status, updated time.Time) operations.Key {
	tb.Helper()
	key := operations.Key{Tenant: tenant, Action: "create_widget", OperationID: uuid.New()}
	created := updated.Add(-time.Minute).UTC()
	if err := d.Gorm.Exec(`INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, 'r', ?, ?)`, key.Tenant, key.Action, key.OperationID.String(), fingerprintA, string(status), created, updated.UTC()).Error; err != nil {
		tb.Fatal(err)
	}
	return key
}

// remaining returns the operation IDs left in the table, sorted.
func remaining(tb testing.TB, d *db.DB) []string {
	tb.Helper()
	var ids []string
	if err := d.Gorm.Table("operations").Order("operation_id").Pluck("operation_id", &ids).Error; err != nil {
		tb.Fatal(err)
	}
	return ids
}

func TestPruneDeletesExactlyOldSucceededRecords(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		now := time.Now().UTC().Truncate(time.Microsecond)
		cutoff := now.Add(-operations.DefaultRetention)
		old := cutoff.Add(-time.Hour)
		young := cutoff.Add(time.Hour)

		var keep []string
		for _, tenant := range []string{"acme", "globex"} {
			for range 3 {
				insertRecord(t, d, tenant, operations.StatusSucceeded, old)
			}
			for _, s := range []operations.Status{operations.StatusPending, operations.StatusFailed, operations.StatusUnknown} {
				keep = append(keep, insertRecord(t, d, tenant, s, old).OperationID.String())
				keep = append(keep, insertRecord(t, d, tenant, s, young).OperationID.String())
			}
			keep = append(keep, insertRecord(t, d, tenant, operations.StatusSucceeded, young).OperationID.String())
			// Exactly at the cutoff is not older than the window.
			keep = append(keep, insertRecord(t, d, tenant, operations.StatusSucceeded, cutoff).OperationID.String())
		}
		// One made through the ledger just now.
		fresh := newKey()
		if _, err := l.Run(ctx, fresh, fingerprintA, "p1", insertProject("p1")); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, fresh.OperationID.String())
		slices.Sort(keep)
		all := remaining(t, d)

		dry, err := l.Prune(ctx, cutoff, 2, true)
		if err != nil || dry != (operations.PruneResult{Eligible: 6}) {
			t.Fatalf("dry run = %+v, %v; want 6 eligible, nothing deleted", dry, err)
		}
		if got := remaining(t, d); !slices.Equal(got, all) {
			t.Fatalf("the dry run deleted %d records", len(all)-len(got))
		}

		res, err := l.Prune(ctx, cutoff, 2, false)
		// 6 eligible at 2 a batch: three full batches and an empty one
		// that proves nothing is left.
		if err != nil || res != (operations.PruneResult{Eligible: 6, Deleted: 6, Batches: 4}) {
			t.Fatalf("prune = %+v, %v; want 6 deleted in 4 batches", res, err)
		}
		if got := remaining(t, d); !slices.Equal(got, keep) {
			t.Fatalf("after prune %d records remain, want exactly the %d ineligible ones", len(got), len(keep))
		}
		again, err := l.Prune(ctx, cutoff, 2, false)
		if err != nil || again != (operations.PruneResult{Batches: 1}) {
			t.Fatalf("second prune = %+v, %v; want nothing to do", again, err)
		}
		// The survivor still replays: pruning never touched its answer.
		out, err := l.Run(ctx, fresh, fingerprintA, "p2", insertProject("p2"))
		if err != nil || !out.Replayed || out.Record.ResultID != "p1" {
			t.Fatalf("replay after prune = %+v, %v", out, err)
		}
	})
}

func TestPruneRejectsBadArguments(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	insertRecord(t, d, "acme", operations.StatusSucceeded, time.Now().Add(-365*24*time.Hour))
	for name, call := range map[string]func() (operations.PruneResult, error){
		"ZeroCutoff":    func() (operations.PruneResult, error) { return l.Prune(context.Background(), time.Time{}, 10, false) },
		"ZeroBatch":     func() (operations.PruneResult, error) { return l.Prune(context.Background(), time.Now(), 0, false) },
		"NegativeBatch": func() (operations.PruneResult, error) { return l.Prune(context.Background(), time.Now(), -1, false) },
	} {
		if _, err := call(); err == nil {
			t.Errorf("%s: Prune accepted it", name)
		}
	}
	if n := len(remaining(t, d)); n != 1 {
		t.Errorf("rejected calls deleted records: %d left, want 1", n)
	}
}

func TestPruneStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	l := operations.NewLedger(d.Gorm, operations.Options{})
	insertRecord(t, d, "acme", operations.StatusSucceeded, time.Now().Add(-365*24*time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Prune(ctx, time.Now(), 10, false); err == nil {
		t.Fatal("Prune with a cancelled context succeeded")
	}
	if n := len(remaining(t, d)); n != 1 {
		t.Errorf("a cancelled prune deleted records: %d left, want 1", n)
	}
}

// tombstones counts the tombstones of every tenant.
func tombstones(tb testing.TB, d *db.DB) int64 {
	tb.Helper()
	var n int64
	if err := d.Gorm.Table("operation_tombstones").Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestPrunedKeyStaysAnswerable prunes one tenant's old record: the dry run
// leaves no tombstone, the prune leaves exactly one, and from then on a
// lookup answers expired (Find) or ErrExpired (Lookup), a retry with any
// input ErrExpired without running its write, and a claim of the key
// (Claim, which has no fast path of its own) ErrExpired with nothing
// claimed. Another tenant's use of the same ID is untouched by it.
func TestPrunedKeyStaysAnswerable(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		l := operations.NewLedger(d.Gorm, operations.Options{})
		now := time.Now().UTC()
		key := insertRecord(t, d, "acme", operations.StatusSucceeded, now.Add(-2*operations.DefaultRetention))
		cutoff := now.Add(-operations.DefaultRetention)

		if _, err := l.Prune(ctx, cutoff, 10, true); err != nil {
			t.Fatal(err)
		}
		if n := tombstones(t, d); n != 0 {
			t.Fatalf("the dry run wrote %d tombstones", n)
		}
		if res, err := l.Prune(ctx, cutoff, 10, false); err != nil || res.Deleted != 1 {
			t.Fatalf("prune = %+v, %v; want 1 deleted", res, err)
		}
		if n := tombstones(t, d); n != 1 {
			t.Fatalf("%d tombstones after pruning one record, want 1", n)
		}

		rec, err := l.Find(ctx, key.Tenant, key.OperationID)
		if err != nil || rec.Status != operations.StatusExpired || rec.Action != key.Action || rec.Fingerprint != fingerprintA {
			t.Errorf("Find after prune = %+v, %v; want status expired under %s", rec, err, key.Action)
		}
		if _, err := l.Lookup(ctx, key); !errors.Is(err, operations.ErrExpired) {
			t.Errorf("Lookup after prune = %v, want ErrExpired", err)
		}
		if _, err := l.Find(ctx, "globex", key.OperationID); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("another tenant's Find = %v, want ErrNotFound", err)
		}
		for name, fp := range map[string]string{"SameInput": fingerprintA, "OtherInput": strings.Repeat("b", 64)} {
			ran := false
			_, err := l.Run(ctx, key, fp, "again", func(*gorm.DB) error { ran = true; return nil })
			if !errors.Is(err, operations.ErrExpired) || ran {
				t.Errorf("%s: retry after prune = %v (write ran: %v), want ErrExpired and no write", name, err, ran)
			}
			want := map[string]string{"SameInput": "is the same as", "OtherInput": "differs from"}[name]
			if err != nil && !strings.Contains(err.Error(), want) {
				t.Errorf("%s: retry after prune says %q, want it to say the input %s the pruned write's", name, err, want)
			}
		}
		within := false
		if _, err := l.Claim(ctx, key, fingerprintA, "again", func(*gorm.DB) error { within = true; return nil }); !errors.Is(err, operations.ErrExpired) || within {
			t.Errorf("Claim of a pruned key = %v (within ran: %v), want ErrExpired and nothing claimed", err, within)
		}
		if ids := remaining(t, d); len(ids) != 0 {
			t.Errorf("records after retrying a pruned key: %v, want none", ids)
		}
		// The same ID is another tenant's own: it runs there.
		other := key
		other.Tenant = "globex"
		if out, err := l.Run(ctx, other, fingerprintA, "theirs", insertProject("theirs")); err != nil || out.Replayed {
			t.Errorf("another tenant's first use of the ID = %+v, %v; want a fresh write", out, err)
		}
	})
}
