// Package tracked is the backend of tracker-backed projects: the
// reconciliation that any tracker without an idempotency key needs (claim,
// send, record, reconcile), over the tracker port (internal/tracker) that
// each tracker's adapter implements (internal/tracker/github,
// internal/tracker/jira). It writes
// the local rows that mirror what the tracker proved through tickets.Mirror,
// and is reached by tickets.Service through tickets.Trackers, which Options
// implements (docs/architecture.md#backends).
package tracked

import (
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Tracker-backed projects (docs/contract.md#tracker-backed-projects). A
// create, an edit or a comment in such a project is a call to a tracker
// that has no idempotency key, so the ledger cannot make it happen once by
// holding one transaction. Instead:
//
//  1. the operation is claimed as pending and committed, with what to send
//     (operation_downstream) and a reconciliation job, before anything is sent;
//  2. every request that may reach the tracker is counted (attempts) and
//     committed before it leaves; a create or a comment carries the
//     operation's marker;
//  3. a definite answer settles the operation (succeeded, or failed for a
//     refusal that proves nothing happened); anything else is unknown;
//  4. before any second request, reconciliation looks at the tracker (the
//     marked issues, the marked comments, or the issue itself for
//     an edit) and, finding nothing, waits out the settle window since the
//     last request (which may still be in flight), looks again, and only
//     then sends once more;
//  5. a duplicate the tracker let through anyway is found by a later look,
//     the younger closed (an issue) or deleted (a comment), and recorded on
//     the operation: detected after the fact, never claimed impossible.
//
// The local ticket, event and comment rows mirror what was proven, written
// with the record's move to succeeded (and the webhook outbox), as a local
// write is. Only one worker at a time (a retry, the River job, an operator)
// works on an operation: it holds the row's lease, bounded so a crashed
// holder's lease runs out.
//
// Files: answer.go (claim and answers), reconcile.go (the round),
// create.go, comment.go and update.go (each action's look and send),
// resolve.go (an operator's finding), outside.go (the tenant's cap on
// tracker requests), rows.go (operation_downstream and its history),
// backend.go (the tickets.Trackers this package is), index.go (whether
// the tracker's index has caught up before a re-send), assignee.go (an
// assignee's tracker account, found before an edit is claimed).

// Options configures tracker-backed projects; it is the tickets.Connector
// of tickets.Options.Tracked.
type Options struct {
	// Open reaches a project's tracker (tracker.ByKind of the adapters'
	// openers: internal/tracker/github.Opener, internal/tracker/jira.PortOpener).
	Open tracker.Opener
	// Credentials are the tracker credentials the operator declared; a
	// backend must name one its tenant may use, at creation and at use.
	Credentials tracker.Credentials
	// Guard judges a backend's api_url at creation (the adapter judges
	// every connection with the same policy).
	Guard ssrf.Guard
	// Scheduler queues an operation's reconciliation in the claiming
	// transaction, so a crash after the claim is still settled; nil leaves
	// settling to retries and operators.
	Scheduler Scheduler
	// Settle is how long after a request that went unanswered ticketd waits
	// for it to land before sending again (TICKETD_RECONCILE_SETTLE, default 2m).
	Settle time.Duration
	// Lease bounds one reconciliation: how long it may hold an operation,
	// and so how long a crashed holder delays the next (default 1m). It must
	// exceed several tracker requests.
	Lease time.Duration
	// OnReconcile is told the result of each look at the tracker (one of
	// the Reconcile* constants), for metrics. Cheap and concurrency-safe.
	OnReconcile func(result string)
	// Concurrency bounds one tenant's tracker requests in flight at once
	// (TICKETD_TRACKER_CONCURRENCY); limits.DefaultOutsideConcurrency if
	// zero. A request waiting on a tracker holds no work slot
	// (limits.Outside), so a hanging tracker costs its own tenant only.
	Concurrency int

	outside *limits.Outside
}

func (o Options) withDefaults() Options {
	if o.Concurrency <= 0 {
		o.Concurrency = limits.DefaultOutsideConcurrency
	}
	o.outside, _ = limits.NewOutside(o.Concurrency) // cannot fail: Concurrency > 0
	if o.Settle <= 0 {
		o.Settle = 2 * time.Minute
	}
	if o.Lease <= 0 {
		o.Lease = time.Minute
	}
	return o
}

// Scheduler queues the reconciliation of an operation to run at a time,
// inside tx (internal/reconciler implements it with River).
type Scheduler interface {
	Schedule(tx *gorm.DB, key operations.Key, at time.Time) error
}

// The results of a reconciliation, as counted by OnReconcile.
const (
	// ReconcileFound: an earlier request's issue was found by its marker;
	// nothing was sent again.
	ReconcileFound = "found"
	// ReconcileWaiting: no issue found yet, inside the settle window.
	ReconcileWaiting = "waiting"
	// ReconcileResent: none found after the settle window; sent again.
	ReconcileResent = "resent"
	// ReconcileDuplicate: a duplicate was found and closed.
	ReconcileDuplicate = "duplicate"
	// ReconcileVerified: a duplicate check found exactly one issue.
	ReconcileVerified = "verified"
	// ReconcileHeld: an edit the issue does not show, on an issue changed
	// since it was sent: left to an operator rather than re-sent.
	ReconcileHeld = "held"
	// ReconcileError: the tracker could not be asked.
	ReconcileError = "error"
	// ReconcileResolved: an operator recorded a finding.
	ReconcileResolved = "resolved"
)

// ReconcileResults lists the results, for metrics that show all from the start.
func ReconcileResults() []string {
	return []string{ReconcileFound, ReconcileWaiting, ReconcileResent, ReconcileDuplicate, ReconcileVerified, ReconcileHeld, ReconcileError, ReconcileResolved}
}
