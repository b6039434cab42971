package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
)

// ErrReplicaNotPostgres is returned for a read replica with a non-PostgreSQL
// primary or URL: SQLite has no standbys.
var ErrReplicaNotPostgres = errors.New("a read replica needs PostgreSQL for both the primary (TICKETD_DATABASE_URL) and the replica")

// Replica is a hot standby that serves reads which can tolerate running
// elsewhere than on the primary (docs/scale.md): lists, search, history.
type Replica struct {
	// Reads runs each query on the standby when the standby has replayed
	// everything the primary had committed when the query began, and on
	// the primary otherwise. A caller therefore never misses a write that
	// was acknowledged before its read started, its own included, however
	// far the standby lags: lag costs the primary work, never a wrong answer.
	Reads *gorm.DB
	db    *DB
	pool  *routingPool
}

// AttachReplica connects to the standby at rawURL (TICKETD_READ_DATABASE_URL)
// and sets d.Replica, the read path over it and d; Close closes both.
//
// The URL should lead to one standby (pgx spreads nothing across the hosts
// of a multi-host URL: it takes the first that answers). A multi-host URL
// with target_session_attrs=prefer-standby keeps reads going to whichever
// node is left after a failover.
func (d *DB) AttachReplica(ctx context.Context, rawURL string) error {
	if d.Dialect != Postgres {
		return ErrReplicaNotPostgres
	}
	if dialect, _, err := ParseURL(rawURL); err != nil {
		return err
	} else if dialect != Postgres {
		return ErrReplicaNotPostgres
	}
	standby, err := Open(ctx, rawURL)
	if err != nil {
		return err
	}
	primarySQL, err := d.Gorm.DB()
	if err != nil {
		_ = standby.Close()
		return fmt.Errorf("primary database handle: %w", err)
	}
	standbySQL, err := standby.Gorm.DB()
	if err != nil {
		_ = standby.Close()
		return fmt.Errorf("replica database handle: %w", err)
	}
	pool := &routingPool{primary: primarySQL, standby: standbySQL}
	// A Session with a Context gets a Statement of its own, so the pool is
	// swapped in the copy and d.Gorm keeps the primary's.
	reads := d.Gorm.Session(&gorm.Session{NewDB: true, Context: context.Background()})
	reads.Statement.ConnPool = pool
	d.Replica = &Replica{Reads: reads, db: standby, pool: pool}
	return nil
}

// Served returns how many queries of the read path ran on the standby and
// how many on the primary because the standby had not caught up (or could
// not say).
func (r *Replica) Served() (standby, primary uint64) {
	return r.pool.onStandby.Load(), r.pool.onPrimary.Load()
}

// lagSQL is how far the standby's visible data trails the primary, in
// seconds: zero when it has replayed all it received (an idle primary sends
// nothing, and the last replayed transaction's age would grow without any
// lag), else the age of the last transaction it replayed. A promoted
// standby has no lag.
const lagSQL = `SELECT CASE
	WHEN NOT pg_is_in_recovery() THEN 0
	WHEN pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
	ELSE COALESCE(EXTRACT(EPOCH FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8`

// Lag returns how many seconds the standby's data trails the primary.
func (r *Replica) Lag(ctx context.Context) (float64, error) {
	var lag float64
	if err := r.pool.standby.QueryRowContext(ctx, lagSQL).Scan(&lag); err != nil {
		return 0, fmt.Errorf("read replica lag: %w", err)
	}
	return lag, nil
}

// Close releases the standby's connection pool.
func (r *Replica) Close() error { return r.db.Close() }

// routingPool is the gorm connection pool behind Replica.Reads.
type routingPool struct {
	primary, standby     *sql.DB
	onStandby, onPrimary atomic.Uint64
	// standbyDownUntil (Unix nanoseconds): after the standby failed to
	// answer, reads go straight to the primary until then, instead of each
	// waiting for the standby's connect timeout first.
	standbyDownUntil atomic.Int64
}

// standbyRetryAfter is how long reads skip a standby that failed to answer.
const standbyRetryAfter = 5 * time.Second

// pick returns the pool a query starting now may run on.
func (p *routingPool) pick(ctx context.Context) *sql.DB {
	if p.caughtUp(ctx) {
		p.onStandby.Add(1)
		return p.standby
	}
	p.onPrimary.Add(1)
	return p.primary
}

// caughtUp reports whether the standby has replayed everything the primary
// has committed so far. Any failure to tell counts as no: the primary then
// answers, and if it cannot, the query fails as it would without a replica.
//
// Every query asks the standby afresh rather than trusting a position seen
// before: after a failover the URL may lead to another node (one rebuilt or
// rewound, behind what was seen), and only its own answer says what it holds.
func (p *routingPool) caughtUp(ctx context.Context) bool {
	var raw string
	if err := p.primary.QueryRowContext(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&raw); err != nil {
		return false
	}
	committed, err := parseLSN(raw)
	if err != nil {
		return false
	}
	if time.Now().UnixNano() < p.standbyDownUntil.Load() {
		return false
	}
	var replayed sql.NullString
	var standby bool
	if err := p.standby.QueryRowContext(ctx, "SELECT pg_last_wal_replay_lsn()::text, pg_is_in_recovery()").Scan(&replayed, &standby); err != nil {
		if ctx.Err() == nil {
			p.standbyDownUntil.Store(time.Now().Add(standbyRetryAfter).UnixNano())
		}
		return false
	}
	if !standby || !replayed.Valid {
		// Promoted (or never a standby): it holds what it committed itself,
		// not necessarily what the primary did.
		return false
	}
	at, err := parseLSN(replayed.String)
	return err == nil && at >= committed
}

// parseLSN reads PostgreSQL's text form of a WAL position, "16/B374D848".
func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("WAL position %q: want HI/LO", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("WAL position %q: %w", s, err)
	}
	return h<<32 | l, nil
}

func (p *routingPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.primary.PrepareContext(ctx, query)
}

// ExecContext runs on the primary: nothing on the read path writes, and a
// write must never reach a standby.
func (p *routingPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.primary.ExecContext(ctx, query, args...)
}

func (p *routingPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.pick(ctx).QueryContext(ctx, query, args...)
}

func (p *routingPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.pick(ctx).QueryRowContext(ctx, query, args...)
}
