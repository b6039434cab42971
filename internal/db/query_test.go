package db

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// InIndexOrder's settings hold for the statement and end with it: the next
// statement on the same connection sorts again.
func TestQueryInIndexOrderSettingsEndWithTheStatement(t *testing.T) {
	t.Parallel()
	d := openTestPostgres(t)
	pool, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1) // one session: the second query runs where the first did
	ctx := context.Background()
	settings := func(st Statement) (sort, incremental string) {
		t.Helper()
		st.SQL = "SELECT current_setting('enable_sort'), current_setting('enable_incremental_sort') WHERE $1::int = 1"
		st.Args, st.Table = []any{1}, "settings"
		err := Query(ctx, d.Gorm, st, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&sort, &incremental); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return sort, incremental
	}
	if sort, incremental := settings(Statement{InIndexOrder: true}); sort != "off" || incremental != "off" {
		t.Errorf("in index order: enable_sort %q, enable_incremental_sort %q; want both off", sort, incremental)
	}
	if sort, incremental := settings(Statement{}); sort != "on" || incremental != "on" {
		t.Errorf("the next statement: enable_sort %q, enable_incremental_sort %q; want both on again", sort, incremental)
	}
}

// ByKey's settings hold for the statement, together with InIndexOrder's
// when both are asked for, and end with it.
func TestQueryByKeySettingsEndWithTheStatement(t *testing.T) {
	t.Parallel()
	d := openTestPostgres(t)
	pool, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1) // one session: the second query runs where the first did
	settings := func(st Statement) (got [3]string) {
		t.Helper()
		st.SQL = "SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan'), current_setting('enable_sort') WHERE $1::int = 1"
		st.Args, st.Table = []any{1}, "settings"
		err := Query(context.Background(), d.Gorm, st, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&got[0], &got[1], &got[2]); err != nil {
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
	if got := settings(Statement{ByKey: true, InIndexOrder: true}); got != [3]string{"force_generic_plan", "off", "off"} {
		t.Errorf("by key and in index order: plan_cache_mode, enable_seqscan, enable_sort = %q", got)
	}
	if got := settings(Statement{}); got != [3]string{"force_custom_plan", "on", "on"} {
		t.Errorf("the next statement: %q; want the session's force_custom_plan, on, on", got)
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
