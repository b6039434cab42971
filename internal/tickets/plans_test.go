package tickets_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestReplayReadsOnlyItsOwnKeyAfterTheTablesGrow is the collapse of issue
// 33: a replay's lookup, planned while the tables were small and never
// analysed, must not go on scanning the whole tenant once they have grown
// (autovacuum has not run; nothing is analysed here). Index tuples read are
// counted by PostgreSQL itself, so the test needs no timing.
func TestReplayReadsOnlyItsOwnKeyAfterTheTablesGrow(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	pool, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	// One connection, so every call below reuses one server session and
	// whatever plans it has cached.
	pool.SetMaxOpenConns(1)
	svc := newService(t, d)
	ctx := context.Background()
	caller := tickets.Caller{Tenant: tenantA, Subject: "alice"}

	// Enough executions on small tables for PostgreSQL to settle on a plan.
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = newID()
		for range 2 {
			if _, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(ids[i]), printerTicket()); err != nil {
				t.Fatal(err)
			}
		}
	}

	const grown = 20000
	exec := func(sql string) {
		t.Helper()
		if err := d.Gorm.Exec(sql).Error; err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO tickets (id, tenant_id, project_id, number, key, title, priority, status, reporter, operation_id, created_at, updated_at)
SELECT gen_random_uuid(), '` + tenantA + `', 'support', 1000 + g, 'BULK-' || g, 'bulk', 'normal', 'open', 'alice', gen_random_uuid(), now(), now()
FROM generate_series(1, ` + strconv.Itoa(grown) + `) AS g`)
	exec(`INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
SELECT tenant_id, 'create_ticket', operation_id, repeat('0', 64), 'succeeded', id::text, created_at, updated_at
FROM tickets WHERE key LIKE 'BULK-%'`)

	before := indexTuplesRead(t, d)
	for _, id := range ids {
		res, err := svc.CreateTicket(ctx, caller, ticketstest.OpID(id), printerTicket())
		if err != nil || !res.Replayed {
			t.Fatalf("replay = %+v, %v; want a replay", res, err)
		}
	}
	after := indexTuplesRead(t, d)
	// A replay reads its record and its ticket by key: a few index tuples
	// each, nowhere near the tenant's 20,000.
	read := after - before
	t.Logf("%d replays read %d index tuples", len(ids), read)
	if read > int64(len(ids))*20 {
		t.Errorf("%d replays read %d index tuples over tables of %d rows: a lookup scans the tenant", len(ids), read, grown)
	}
}

// indexTuplesRead is how many index entries the test's schema has read on
// the tables a replay reads. The session's counters are flushed first: the
// pool has one connection, so the flush and the read are in the session
// that ran the replays.
func indexTuplesRead(tb testing.TB, d *db.DB) int64 {
	tb.Helper()
	var n int64
	err := d.Gorm.Exec("SELECT pg_stat_force_next_flush()").Error
	if err == nil {
		err = d.Gorm.Exec("SELECT pg_stat_clear_snapshot()").Error
	}
	if err == nil {
		err = d.Gorm.Raw(`SELECT coalesce(sum(idx_tup_read), 0) FROM pg_stat_user_indexes
WHERE schemaname = current_schema() AND relname IN ('operations', 'tickets', 'operation_tombstones')`).Scan(&n).Error
	}
	if err != nil {
		tb.Fatal(err)
	}
	return n
}
