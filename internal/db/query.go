package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/observe/spans"
)

// Statement is one PostgreSQL SELECT for Query.
type Statement struct {
	SQL   string // with $1, $2, … placeholders
	Args  []any
	Table string // the table it reads, for its span's name
}

// Query runs st on a connection of g's pool (for Replica.Reads, the standby
// or the primary as for any read) and passes its rows to scan, which must
// not keep them.
//
// Query is for a hot read that GORM would cost more than it does: it
// builds no statement, and pgx scans the rows without database/sql's
// conversions. Its span is the one observe.TraceGORM gives a GORM query.
func Query(ctx context.Context, g *gorm.DB, st Statement, scan func(pgx.Rows) error) (err error) {
	pool, err := poolOf(ctx, g)
	if err != nil {
		return err
	}
	ctx, span := spans.Statement(ctx, "SELECT", st.Table, st.SQL)
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
		rows, err := c.Conn().Query(ctx, st.SQL, st.Args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		if err := scan(rows); err != nil {
			return err
		}
		rows.Close()
		return rows.Err()
	})
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
