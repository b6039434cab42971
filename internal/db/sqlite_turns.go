package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	gormsqlite "github.com/glebarez/sqlite"
)

// openSQLite opens dsn through a driver whose write transactions take
// turns in the process (writeTurns) before SQLite's own lock. SQLite lets
// one writer in at a time and makes the others poll: its busy handler
// sleeps 1, 2, 5, 10, … up to 100 ms between tries, so a writer that
// arrives just after another began sleeps on past the moment the lock is
// free. Three concurrent creates then had a p99 six to ten times their
// p50 (docs/perf.md). Queued in Go, the next writer starts the moment the
// last one commits, in arrival order. Only transactions take turns: a
// single write statement outside one (GORM runs them bare, as
// SkipDefaultTransaction asks: a prune batch, a session's touch) and other
// processes on the same file (ticketd migrate) still meet SQLite's lock
// and its busy timeout.
func openSQLite(dsn string) *sql.DB {
	return sql.OpenDB(sqliteConnector{dsn: dsn, turns: make(writeTurns, 1)})
}

// writeTurns holds one token while a write transaction is open: a send
// takes the turn, a receive gives it back. Waiting senders are served in
// the order they arrived. The turn is one for the whole process and not
// re-entrant: code holding a transaction must never begin another (it
// would wait for itself until its context ends), as SQLite's single
// writer already forbade.
type writeTurns chan struct{}

type sqliteConnector struct {
	dsn   string
	turns writeTurns
}

// sqliteDriver is the driver database/sql.Open("sqlite") uses, the one
// github.com/glebarez/sqlite registers.
var sqliteDriver = sync.OnceValue(func() driver.Driver {
	d, err := sql.Open(gormsqlite.DriverName, "") // opens nothing until used
	if err != nil {
		panic(fmt.Sprintf("the sqlite driver is not registered: %v", err)) // unreachable: glebarez/sqlite registers it
	}
	defer d.Close()
	return d.Driver()
})

func (c sqliteConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := sqliteDriver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks the context methods ticketd relies on", conn)
	}
	return &turnConn{sqliteConn: inner, turns: c.turns}, nil
}

func (c sqliteConnector) Driver() driver.Driver { return sqliteDriver() }

// sqliteConn is what go-sqlite's connection implements; turnConn passes
// all of it through, so database/sql treats it exactly as the bare driver.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
}

// turnConn is a connection whose transactions wait for their turn.
type turnConn struct {
	sqliteConn
	turns writeTurns
	open  *turnTx // the transaction holding the turn, if any
}

func (c *turnConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx waits for the turn (or for ctx), then begins.
func (c *turnConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	select {
	case c.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tx, err := c.sqliteConn.BeginTx(ctx, opts)
	if err != nil {
		<-c.turns
		return nil, err
	}
	c.open = &turnTx{Tx: tx}
	c.open.release = sync.OnceFunc(func() {
		c.open = nil
		<-c.turns
	})
	return c.open, nil
}

// Close gives the turn back if a transaction still holds it: a
// connection closed mid-transaction must not stop every later writer.
func (c *turnConn) Close() error {
	if c.open != nil {
		c.open.release()
	}
	return c.sqliteConn.Close()
}

// turnTx gives the turn back when it ends, however it ends.
type turnTx struct {
	driver.Tx
	release func()
}

func (t *turnTx) Commit() error {
	defer t.release()
	return t.Tx.Commit()
}

func (t *turnTx) Rollback() error {
	defer t.release()
	return t.Tx.Rollback()
}
