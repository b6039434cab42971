package db

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// Session bounds how long one PostgreSQL session can hold what it holds.
// Without these a replica that freezes (container pause, VM stall) or loses
// its network inside a write keeps that write's row locks for as long as the
// kernel's keepalive takes to notice (about two hours) or forever, and every
// write that needs those rows waits: a whole project stops taking tickets.
//
// ticketd sets them itself on every connection it opens rather than leaving
// them to the DSN, so a DSN that forgets them is still safe; a DSN that names
// one of the server parameters explicitly wins, since an operator who wrote
// it meant it.
type Session struct {
	// IdleInTransaction ends a session that sits inside a transaction
	// without sending anything (idle_in_transaction_session_timeout): the
	// frozen client. ticketd's transactions never wait between statements,
	// so this is only ever reached by a client that is gone; it defaults
	// above the ledger's write timeout all the same, so it can never end a
	// write the write timeout would still allow.
	IdleInTransaction time.Duration
	// Statement ends a statement that runs or waits for a lock longer than
	// this (statement_timeout). A live client cancels its own statement at
	// the write timeout; this ends the statement of a client that can no
	// longer cancel, so it defaults above the write timeout too.
	Statement time.Duration
	// TCP bounds how long either end of the connection goes on believing
	// in a peer that stopped answering: keepalive probes start after a
	// third of it, and data left unacknowledged for this long drops the
	// connection (TCP_USER_TIMEOUT). It is applied to the server's end
	// (tcp_keepalives_*, tcp_user_timeout) and to ticketd's own socket.
	TCP time.Duration
}

// Default session limits: above operations.Options' default write timeout
// (15 s), so a write that the write timeout still allows is never cut, and
// far below the kernel's two hours.
const (
	DefaultIdleInTransaction = 20 * time.Second
	DefaultStatement         = 20 * time.Second
	DefaultTCP               = 20 * time.Second
)

// withDefaults fills zero fields with the defaults.
func (s Session) withDefaults() Session {
	if s.IdleInTransaction <= 0 {
		s.IdleInTransaction = DefaultIdleInTransaction
	}
	if s.Statement <= 0 {
		s.Statement = DefaultStatement
	}
	if s.TCP <= 0 {
		s.TCP = DefaultTCP
	}
	return s
}

// keepalive derives the probe schedule from the TCP bound: the first probe
// after a third of it, then three more spread over the rest, so a silent
// peer is given up at about the bound.
func (s Session) keepalive() net.KeepAliveConfig {
	idle := max(s.TCP/3, time.Second)
	interval := max((s.TCP-idle)/3, time.Second)
	return net.KeepAliveConfig{Enable: true, Idle: idle, Interval: interval, Count: 3}
}

// runtimeParams are the server parameters Session sets on each connection,
// in the units PostgreSQL reads without a suffix (milliseconds, seconds).
func (s Session) runtimeParams() map[string]string {
	ka := s.keepalive()
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	secs := func(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }
	return map[string]string{
		"idle_in_transaction_session_timeout": ms(s.IdleInTransaction),
		"statement_timeout":                   ms(s.Statement),
		"tcp_user_timeout":                    ms(s.TCP),
		"tcp_keepalives_idle":                 secs(ka.Idle),
		"tcp_keepalives_interval":             secs(ka.Interval),
		"tcp_keepalives_count":                strconv.Itoa(ka.Count),
		// A prepared statement's generic plan is made once per connection
		// and kept until the next ANALYZE: made while a table was small or
		// never analysed, it can pick an index that scans the whole tenant
		// for a key lookup and keep it as the table grows (docs/perf.md).
		// A custom plan is made with the table's current size each time.
		"plan_cache_mode": "force_custom_plan",
	}
}

// openPostgres opens a pgx-backed pool for dsn whose every connection
// carries the session limits, at both ends of the socket.
func openPostgres(dsn string, s Session) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	s = s.withDefaults()
	for k, v := range s.runtimeParams() {
		if _, set := cfg.RuntimeParams[k]; !set {
			cfg.RuntimeParams[k] = v
		}
	}
	dialer := &net.Dialer{
		KeepAliveConfig: s.keepalive(),
		Control:         userTimeoutControl(s.TCP),
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}
	return stdlib.OpenDB(*cfg), nil
}
