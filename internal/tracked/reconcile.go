package tracked

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// The steps every tracker-backed action shares (docs/contract.md#tracker-backed-projects):
// the lease, one round of work, and recording what a request's answer proves.
// What "look before sending again" means is the action's own: a create lists
// the marked issues (create.go), a comment the marked comments
// (comment.go), an edit reads the issue back (update.go).

// lease takes key's downstream row for one reconciliation. It reports
// busy when another worker holds it, and ok false when there is nothing to
// do (settled, with no duplicate check due, unless force).
func (e *Engine) lease(ctx context.Context, key operations.Key, force bool) (row downstreamRow, ok, busy bool, err error) {
	now := time.Now().UTC()
	q := e.m.DB().WithContext(ctx).Model(&downstreamRow{}).Where(keyWhere(key)).
		Where("(leased_until IS NULL OR leased_until < ?)", now)
	if force {
		q = q.Where("status <> ?", tickets.DownstreamFailed)
	} else {
		q = q.Where("(status IN ? OR next_check_at IS NOT NULL)", []string{tickets.DownstreamPending, tickets.DownstreamUnknown})
	}
	res := q.Updates(map[string]any{"leased_until": now.Add(e.opts.Lease)})
	if res.Error != nil {
		return row, false, false, fmt.Errorf("%w: lease operation %s: %v", tickets.ErrUnavailable, key, res.Error)
	}
	if row, err = e.downstream(ctx, key); err != nil {
		return row, false, false, fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
	}
	if res.RowsAffected == 1 {
		return row, true, false, nil
	}
	held := row.LeasedUntil != nil && row.LeasedUntil.After(now)
	return row, false, held && (row.Status == tickets.DownstreamPending || row.Status == tickets.DownstreamUnknown), nil
}

// reconcile does one round of work on key under its lease: look, settle,
// wait, or send. It reports busy when another worker holds the operation.
func (e *Engine) reconcile(ctx context.Context, key operations.Key, force bool) (busy bool, err error) {
	row, ok, busy, err := e.lease(ctx, key, force)
	if err != nil || !ok {
		return busy, err
	}
	// Every tracker call starts before the lease ends and is bounded by
	// the tracker's own timeout, so no second worker can overlap this one.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.opts.Lease*3/4)
	defer cancel()
	return false, e.work(wctx, key, row)
}

// work opens the operation's tracker and hands the round to its action.
func (e *Engine) work(ctx context.Context, key operations.Key, row downstreamRow) error {
	b, err := e.m.TrackerBackend(ctx, key.Tenant, row.ProjectID)
	if err != nil {
		return e.release(ctx, key, row, err)
	}
	if b == nil {
		return e.release(ctx, key, row, fmt.Errorf("project %s has no tracker backend", row.ProjectID))
	}
	t, err := e.openTracker(key.Tenant, *b)
	if err != nil {
		return e.release(ctx, key, row, err)
	}
	if row.Attempts == 0 && row.LastError != nil && row.NextCheckAt != nil && time.Now().Before(*row.NextCheckAt) {
		// Refused earlier (a rate limit, an open breaker): nothing was
		// done, and the tracker or its breaker asked to wait until then.
		return e.release(ctx, key, row, nil)
	}
	switch key.Action {
	case tickets.ActionAddComment:
		return e.workComment(ctx, key, row, t, *b)
	case tickets.ActionUpdateTicket:
		return e.workEdit(ctx, key, row, t, *b)
	}
	return e.workCreate(ctx, key, row, t, *b)
}

// detach is the context for bookkeeping after a request left: it runs
// even when the caller has gone, so a sent request is never unrecorded.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
}

// release gives the lease back, recording why this round did nothing.
func (e *Engine) release(ctx context.Context, key operations.Key, row downstreamRow, cause error) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	updates := map[string]any{"leased_until": nil, "updated_at": nowUTC()}
	if cause != nil {
		updates["last_error"] = cause.Error()
		if row.NextCheckAt == nil || row.NextCheckAt.Before(time.Now()) {
			updates["next_check_at"] = nowUTC().Add(e.opts.Settle)
		}
	}
	return e.m.DB().WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(updates).Error; err != nil {
			return fmt.Errorf("%w: release operation %s: %v", tickets.ErrUnavailable, key, err)
		}
		if cause == nil {
			return nil
		}
		return addHistory(tx, key, "error", historyActor, cause.Error())
	})
}

// lookFailed counts and records a look at the tracker that could not be made.
func (e *Engine) lookFailed(ctx context.Context, key operations.Key, row downstreamRow, err error) error {
	e.count(ReconcileError)
	return e.release(ctx, key, row, err)
}

// wait records that the look found nothing inside the settle window.
func (e *Engine) wait(ctx context.Context, key operations.Key, row downstreamRow, until time.Time, what string) error {
	e.count(ReconcileWaiting)
	rctx, cancel := detach(ctx)
	defer cancel()
	return e.m.DB().WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"leased_until": nil, "next_check_at": until, "updated_at": nowUTC()}).Error
		if err != nil {
			return fmt.Errorf("%w: record look: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, "looked", historyActor, fmt.Sprintf(
			"%s yet; the last request (%s) may still land: no new request before %s",
			what, row.LastSentAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339)))
	})
}

// attempt counts one request, committed before it leaves: a crash after
// sending leaves attempts > 0, so whoever comes next looks before sending.
func (e *Engine) attempt(ctx context.Context, key operations.Key, row *downstreamRow, what string) error {
	sentAt := nowUTC()
	n := row.Attempts + 1
	err := e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"attempts": n, "last_sent_at": sentAt, "updated_at": sentAt}).Error
		if err != nil {
			return fmt.Errorf("%w: count attempt: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, "sent", historyActor, fmt.Sprintf("attempt %d: %s", n, what))
	})
	if err != nil {
		return errors.Join(err, e.release(ctx, key, *row, nil))
	}
	row.Attempts, row.LastSentAt = n, &sentAt
	return nil
}

// answered records what the answer to the request attempt counted proves:
// done records a success; a refusal that proves nothing happened takes the
// attempt back (next try when the tracker's wait or the host's breaker
// allows, else a settle window on); a definite rejection of a first request is a failure; any
// other answer (a timeout, a dropped connection, a 5xx, or a refusal of a
// re-send, which proves nothing about the first request) is unknown.
func (e *Engine) answered(ctx context.Context, key operations.Key, row downstreamRow, sendErr error, done func(ctx context.Context) error) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	var limited *tracker.RateLimitError
	var down *tracker.HostDownError
	switch {
	case sendErr == nil:
		return done(rctx)
	case errors.Is(sendErr, tracker.ErrInvalid) && row.Attempts == 1:
		// Refused before anything was done, for what was asked: the
		// caller's input, not the tracker's state, is what to change.
		if err := e.fail(rctx, key, sendErr.Error(), "rejected", historyActor); err != nil {
			return err
		}
		return invalidField(invalidSendField(key), "%v", sendErr)
	case errors.As(sendErr, &limited), errors.Is(sendErr, tracker.ErrNotSent), errors.Is(sendErr, tracker.ErrMisconfigured):
		wait := e.opts.Settle
		switch {
		case limited != nil:
			wait = limited.RetryAfter
		case errors.As(sendErr, &down):
			wait = down.RetryAfter
		}
		return e.refused(rctx, key, row.Attempts-1, row.LastSentAt.Add(wait), sendErr)
	case errors.Is(sendErr, tracker.ErrRejected) && row.Attempts == 1:
		return e.fail(rctx, key, sendErr.Error(), "rejected", historyActor)
	}
	return e.markUnknown(rctx, key, row.LastSentAt.Add(e.opts.Settle), sendErr)
}

// invalidSendField names the input a tracker's ErrInvalid refused: an
// edit's status (its only member a tracker can refuse so), else the
// project's backend.
func invalidSendField(key operations.Key) string {
	if key.Action == tickets.ActionUpdateTicket {
		return "status"
	}
	return "project_id"
}

func (e *Engine) refused(ctx context.Context, key operations.Key, attempts int, next time.Time, cause error) error {
	return e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		updates := map[string]any{"attempts": attempts, "last_error": cause.Error(), "next_check_at": next,
			"leased_until": nil, "updated_at": nowUTC()}
		if attempts == 0 {
			updates["last_sent_at"] = nil
		}
		if err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(updates).Error; err != nil {
			return fmt.Errorf("%w: record refusal: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, "not_sent", historyActor, fmt.Sprintf("nothing done (%v); next try at %s", cause, next.UTC().Format(time.RFC3339)))
	})
}

func (e *Engine) markUnknown(ctx context.Context, key operations.Key, next time.Time, cause error) error {
	return e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if _, err := operations.Settle(tx, key, operations.StatusUnknown, "", ""); err != nil {
			return err
		}
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": tickets.DownstreamUnknown, "last_error": cause.Error(), "next_check_at": next, "leased_until": nil, "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record unknown: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, "no_answer", historyActor, fmt.Sprintf("no definite answer (%v): it may have happened; reconciling at %s before any new request",
			cause, next.UTC().Format(time.RFC3339)))
	})
}

// hold leaves an operation unknown for an operator: the tracker shows
// something ticketd cannot tell apart from its own request's effect, and a
// re-send could undo someone else's later change. Nothing is checked again.
func (e *Engine) hold(ctx context.Context, key operations.Key, row downstreamRow, why string) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	return e.m.DB().WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		if _, err := operations.Settle(tx, key, operations.StatusUnknown, "", ""); err != nil {
			return err
		}
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": tickets.DownstreamUnknown, "last_error": why, "next_check_at": nil, "leased_until": nil, "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record hold: %v", tickets.ErrUnavailable, err)
		}
		if deref(row.LastError) == why {
			return nil
		}
		return addHistory(tx, key, "needs_operator", historyActor, why)
	})
}

func (e *Engine) fail(ctx context.Context, key operations.Key, reason, kind, actor string) error {
	return e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		ok, err := operations.Settle(tx, key, operations.StatusFailed, "", reason)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: operation %s is already settled", tickets.ErrSettled, key)
		}
		err = tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": tickets.DownstreamFailed, "last_error": reason, "next_check_at": nil, "leased_until": nil, "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record failure: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, kind, actor, reason)
	})
}

// checkAgain schedules another duplicate check, or ends them.
func (e *Engine) checkAgain(ctx context.Context, key operations.Key, row downstreamRow, why string) error {
	rctx, cancel := detach(ctx)
	defer cancel()
	var next any
	if n := time.Now().UTC().Add(e.opts.Settle); row.LastSentAt != nil && n.Before(row.LastSentAt.Add(4*e.opts.Settle)) {
		next = n
	}
	return e.m.DB().WithContext(rctx).Transaction(func(tx *gorm.DB) error {
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).
			Updates(map[string]any{"next_check_at": next, "leased_until": nil, "updated_at": nowUTC()}).Error
		if err != nil {
			return fmt.Errorf("%w: record check: %v", tickets.ErrUnavailable, err)
		}
		return addHistory(tx, key, "looked", historyActor, why)
	})
}

// ReconcileDue runs one round of reconciliation for the job queue: it
// reports when to look again, or done once nothing is left to check. A
// settled operation's duplicate check runs no earlier than it is due.
//
// Errors: ErrUnavailable (retry later).
func (e *Engine) ReconcileDue(ctx context.Context, key operations.Key) (next time.Time, done bool, err error) {
	row, err := e.downstream(ctx, key)
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return time.Time{}, true, nil // pruned
	case err != nil:
		return time.Time{}, false, fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
	}
	settled := row.Status == tickets.DownstreamSucceeded || row.Status == tickets.DownstreamFailed
	if !settled || row.NextCheckAt == nil || !row.NextCheckAt.After(time.Now()) {
		var invalid *tickets.ValidationError
		if _, err := e.reconcile(ctx, key, false); err != nil && !errors.Is(err, tickets.ErrSettled) && !errors.As(err, &invalid) {
			return time.Time{}, false, err
		}
		if row, err = e.downstream(ctx, key); err != nil {
			return time.Time{}, false, fmt.Errorf("%w: %v", tickets.ErrUnavailable, err)
		}
	}
	settled = row.Status == tickets.DownstreamSucceeded || row.Status == tickets.DownstreamFailed
	if row.NextCheckAt == nil && (settled || row.Status == tickets.DownstreamUnknown && row.LeasedUntil == nil) {
		// Settled with nothing left to check, or held for an operator.
		return time.Time{}, true, nil
	}
	next = time.Now().Add(e.opts.Settle)
	if row.NextCheckAt != nil {
		next = *row.NextCheckAt
	}
	if row.LeasedUntil != nil && row.LeasedUntil.After(next) {
		next = *row.LeasedUntil
	}
	// A round that could not record its step (the database failing) leaves
	// a due time in the past: look again shortly, not in a tight loop.
	if soon := time.Now().Add(time.Second); next.Before(soon) {
		next = soon
	}
	return next, false, nil
}
