package operations

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// AutocommitFunc is a write as one statement that commits by itself: it
// runs on db, outside any transaction, one statement that begins with
// ClaimWithIf (the claim gated on what the write needs to go ahead alone)
// and gates the rest on ClaimWon, and reports it with fold.Report.
// PostgreSQL runs a statement outside a transaction block in a transaction
// of its own, so the claim and the write commit or roll back together.
//
// It returns false, having written nothing, when the write needs more than
// that statement: known before it runs, or found by the statement (its
// claim's condition false); the ledger then runs the write in a transaction
// instead. It returns true once the statement decided the call: whatever it
// did has committed when it returns, so it must do everything that can fail
// before it, and nothing after it but read its row.
type AutocommitFunc func(db *gorm.DB, fold *Fold) (ran bool, err error)

// RunAutocommit is RunFolded whose first execution on PostgreSQL is offered
// to single first, unless the gate has a consuming step, which must commit
// with the write: one statement instead of BEGIN, the write's first
// statement and COMMIT, two round trips fewer. When single declines, and on
// SQLite, write runs as RunFolded runs it.
//
// The answers and guarantees are RunFolded's. The statement's reply is its
// commit's, so a statement that fails in any way but an error PostgreSQL
// reported for it (an ERROR, which rolled it back) or one the driver raised
// before sending it is ErrOutcomeUnknown, as a lost COMMIT reply is: the
// connection lost while it ran or before its reply came, the write timeout
// ended while it waited, a FATAL error (which may follow the commit). Such
// an error cannot tell whether pgx was still preparing the statement, so a
// connection lost then is ErrOutcomeUnknown too, though nothing ran.
//
// Errors: those of RunFolded.
func (l *Ledger) RunAutocommit(ctx context.Context, key Key, fingerprint, resultID string, gate GateFunc, replay Replay, single AutocommitFunc, write FoldedWriteFunc) (Outcome, error) {
	if l.db.Dialector.Name() != "postgres" {
		single = nil
	}
	return l.run(ctx, key, fingerprint, resultID, gate, replay, l.db.Dialector.Name() == "postgres", single, write)
}

// autocommit runs single and answers for it; ran false means it declined
// and nothing was written.
func (l *Ledger) autocommit(ctx context.Context, key Key, fingerprint, resultID string, single AutocommitFunc) (_ Outcome, ran bool, _ error) {
	db := l.db.WithContext(ctx)
	fold := l.newFold(key, fingerprint, resultID, StatusSucceeded, true)
	ran, err := single(db, fold)
	switch {
	case fold.err != nil && !rolledBack(fold.err):
		out, err := outcomeUnknown(key, fingerprint, fold.err)
		return out, true, err
	case fold.err != nil && isLockTimeout(fold.err):
		out, err := inProgress(key)
		return out, true, err
	case fold.err != nil && err == nil:
		return Outcome{}, true, claimFailed(fold.err)
	case fold.won && err != nil:
		// Committed: the write failed to read its own row. A retry replays.
		out, err := outcomeUnknown(key, fingerprint, fmt.Errorf("committed, then: %w", err))
		return out, true, err
	case err != nil:
		return Outcome{}, true, err // nothing committed: the statement failed, or never ran
	case !ran:
		return Outcome{}, false, nil
	case !fold.reported:
		return Outcome{}, true, fmt.Errorf("operation %s: the write never ran its claim", key)
	case !fold.won:
		out, err := answerTaken(db, key, fingerprint)
		return out, true, err
	}
	rec, err := fold.row.toRecord()
	return Outcome{Record: rec}, true, err
}

// rolledBack reports whether err, a statement's, proves that the statement
// did not commit: PostgreSQL reported an ERROR for it, which ends its
// transaction (the implicit one of a statement outside a transaction block
// included), or the driver failed before sending it (database/sql's
// driver.ErrBadConn, which pgx's stdlib returns only then, and pgconn's
// SafeToRetry). A FATAL or PANIC ends the session and may come after the
// commit.
func rolledBack(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		severity := pgErr.SeverityUnlocalized
		if severity == "" {
			severity = pgErr.Severity
		}
		return severity == "ERROR"
	}
	return errors.Is(err, driver.ErrBadConn) || pgconn.SafeToRetry(err)
}
