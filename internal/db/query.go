package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/observe/spans"
)

// Statement is one PostgreSQL statement that returns rows, for Query.
type Statement struct {
	SQL   string // with $1, $2, … placeholders
	Args  []any
	Table string // the table it reads, for its span's name
	Verb  string // its first verb, for its span's name; "" is SELECT
	// InIndexOrder plans the statement with sorting off, so its rows come
	// in the order of an index that provides its ORDER BY. It is for a
	// keyset page: on tables never analysed the planner takes an equality
	// to match 0.5 % of the rows (for one tenant's rows, about a page at a
	// few thousand tickets), so reading them all, by a bitmap scan or by any
	// index that starts with the tenant, and sorting them looks as cheap as
	// walking the index for a page, and it goes on doing so however large
	// the tenant has grown (docs/perf.md). Without a sort the walk is the
	// plan, with statistics or without. Set it only when every filter the
	// statement has is either the walked index's or one the walk applies
	// to the rows it reads (a sort of a more selective index's rows would
	// read fewer). Since the walk is the plan whatever the arguments, the
	// statement is planned once per connection, as ByKey's are: planning
	// it on every execution only found the same walk again, and was
	// about 45 % of what PostgreSQL spent on a list (docs/perf.md).
	InIndexOrder bool
	// ByKey plans the statement once per connection (a generic plan, kept with
	// pgx's cached prepared statement until an error or the cache's eviction
	// drops it) with index scans and nested loops only, rather than on every
	// execution as the session plans (plan_cache_mode, session.go): that keeps
	// plans right as tables grow but costs planning each time, and for a
	// statement over tables with many indexes, such as a create's, planning is a
	// large part of what PostgreSQL spends on it (docs/perf.md). A generic plan
	// is made once, possibly on small tables, and kept as they grow: a sequential
	// scan there, a whole tenant read for every key later, unless scans other
	// than an index's are off when it is made. Set it only on a statement that
	// reads rows by a unique key where no other index it can use (a partial
	// index whose predicate it does not state is none) starts with that key's
	// leading columns, or where that other index holds few rows per key: two
	// such indexes cost the same on small tables, and which one a plan keeps
	// varies (operations_pkey against operations_tenant_created, until the
	// second was made partial for the ledger's lookup: migrations 00017). The
	// plans test (TestReplayReadsOnlyItsOwnKeyAfterTheTablesGrow) shows a
	// change.
	ByKey bool
}

// inIndexOrder is the setting InIndexOrder sends, local to the implicit
// transaction the statement runs in so it ends with it: a generic plan,
// made with neither a full sort nor an incremental one (an index's order
// completed by sorting each group).
const inIndexOrder = "set_config('plan_cache_mode', 'force_generic_plan', true), " +
	"set_config('enable_sort', 'off', true), set_config('enable_incremental_sort', 'off', true)"

// byKey is the setting ByKey sends, local as inIndexOrder is: a generic
// plan, made with only index scans and nested loops. PostgreSQL still
// takes a path it turned off when none other is left (a table with no
// index for the statement), so the setting cannot make a statement fail.
const byKey = "set_config('plan_cache_mode', 'force_generic_plan', true), set_config('enable_seqscan', 'off', true), " +
	"set_config('enable_bitmapscan', 'off', true), set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true)"

// setting is the planner setting st sends before itself, or "": both, when
// both are asked for.
func (st Statement) setting() string {
	var calls []string
	if st.ByKey {
		calls = append(calls, byKey)
	}
	if st.InIndexOrder {
		calls = append(calls, inIndexOrder)
	}
	if len(calls) == 0 {
		return ""
	}
	return "SELECT " + strings.Join(calls, ", ")
}

// Query runs st on a connection of g's pool (for Replica.Reads, the standby
// or the primary as for any read) and passes its rows to scan, which must
// not keep them. A planner setting travels in the same round trip, before
// the statement and in the one implicit transaction that ends at the
// pipeline's Sync, so the setting never reaches another statement; what
// was planned under it is kept (ByKey's plan, and the plans of the
// foreign-key checks its statement runs, which are generic too under
// force_generic_plan: the session's force_custom_plan replans those).
//
// Query is for a hot read that GORM would cost more than it does: it
// builds no statement, and pgx scans the rows without database/sql's
// conversions. Its span is the one observe.TraceGORM gives a GORM query.
func Query(ctx context.Context, g *gorm.DB, st Statement, scan func(pgx.Rows) error) (err error) {
	pool, err := poolOf(ctx, g)
	if err != nil {
		return err
	}
	verb := st.Verb
	if verb == "" {
		verb = "SELECT"
	}
	ctx, span := spans.Statement(ctx, verb, st.Table, st.SQL)
	defer func() { spans.End(span, err) }()
	conn, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("query %s: %w", st.Table, err)
	}
	defer func() { err = errors.Join(err, conn.Close()) }()
	return conn.Raw(func(driverConn any) error {
		c, ok := driverConn.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("query %s: %T is not a pgx connection", st.Table, driverConn)
		}
		batch := &pgx.Batch{}
		setting := st.setting()
		if setting != "" {
			batch.Queue(setting)
		}
		batch.Queue(st.SQL, st.Args...)
		results := c.Conn().SendBatch(ctx, batch)
		return errors.Join(readResults(results, setting != "", scan), results.Close())
	})
}

// QueryFirst runs st as Query does and scans its first row into dest;
// found is false when it returned none.
func QueryFirst(ctx context.Context, g *gorm.DB, st Statement, dest ...any) (found bool, err error) {
	err = Query(ctx, g, st, func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		found = true
		return rows.Scan(dest...)
	})
	return found, err
}

// readResults reads the setting's result, if one was sent, then passes the
// statement's rows to scan.
func readResults(results pgx.BatchResults, setting bool, scan func(pgx.Rows) error) error {
	if setting {
		if _, err := results.Exec(); err != nil {
			return fmt.Errorf("planner setting: %w", err)
		}
	}
	rows, err := results.Query()
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := scan(rows); err != nil {
		return err
	}
	rows.Close()
	return rows.Err()
}

// poolOf is the pool g's statements run on.
func poolOf(ctx context.Context, g *gorm.DB) (*sql.DB, error) {
	switch pool := g.Statement.ConnPool.(type) {
	case *sql.DB:
		return pool, nil
	case *routingPool:
		return pool.pick(ctx), nil
	}
	return nil, fmt.Errorf("query: %T is not a connection pool", g.Statement.ConnPool)
}
