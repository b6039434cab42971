package db

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// A Statement's planner settings hold for it and end with it: the next
// statement on the same connection plans as the session does (each
// execution, sorting on, sequential scans on). ByKey and InIndexOrder
// combine.
func TestQuerySettingsEndWithTheStatement(t *testing.T) {
	t.Parallel()
	d := openTestPostgres(t)
	pool, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1) // one session: each query runs where the one before did
	settings := func(st Statement) (got [4]string) {
		t.Helper()
		st.SQL = `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan'),
	current_setting('enable_sort'), current_setting('enable_incremental_sort') WHERE $1::int = 1`
		st.Args, st.Table = []any{1}, "settings"
		err := Query(context.Background(), d.Gorm, st, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&got[0], &got[1], &got[2], &got[3]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	session := [4]string{"force_custom_plan", "on", "on", "on"}
	for _, c := range []struct {
		name string
		st   Statement
		want [4]string
	}{
		{"InIndexOrder", Statement{InIndexOrder: true}, [4]string{"force_generic_plan", "on", "off", "off"}},
		{"ByKey", Statement{ByKey: true}, [4]string{"force_generic_plan", "off", "on", "on"}},
		{"Both", Statement{ByKey: true, InIndexOrder: true}, [4]string{"force_generic_plan", "off", "off", "off"}},
	} {
		if got := settings(c.st); got != c.want {
			t.Errorf("%s: plan_cache_mode, enable_seqscan, enable_sort, enable_incremental_sort = %q, want %q", c.name, got, c.want)
		}
		if got := settings(Statement{}); got != session {
			t.Errorf("the statement after %s: %q, want the session's %q", c.name, got, session)
		}
	}
}

// Through Replica.Reads a Query is routed as any read is: with the
// "standby" a primary (so never caught up), it runs on the primary.
func TestQueryThroughTheReadPathIsRouted(t *testing.T) {
	t.Parallel()
	d := openTestPostgres(t)
	if err := d.AttachReplica(context.Background(), testPostgresURL(t)); err != nil {
		t.Fatal(err)
	}
	var one int
	err := Query(context.Background(), d.Replica.Reads, Statement{SQL: "SELECT $1::int", Args: []any{1}, Table: "nothing"}, func(rows pgx.Rows) error {
		for rows.Next() {
			if err := rows.Scan(&one); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || one != 1 {
		t.Fatalf("Query on the read path = %d, %v; want 1", one, err)
	}
	if onStandby, onPrimary := d.Replica.Served(); onStandby != 0 || onPrimary != 1 {
		t.Errorf("served %d on the standby and %d on the primary, want 0 and 1", onStandby, onPrimary)
	}
}
