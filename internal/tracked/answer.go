package tracked

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// What every tracker-backed action shares with the caller: the claim, the
// answer to a first call and to a retry, and the recording of a success.

// claimTracked claims key as pending with its downstream row and its
// reconciliation job, and commits, before anything is sent. within, when
// given, runs first in the same transaction (a ticket lock, an approval to
// consume) and may complete row; its error leaves nothing claimed.
func (e *Engine) claimTracked(ctx context.Context, key operations.Key, fp, resultID, actor string, row downstreamRow, within func(tx *gorm.DB, row *downstreamRow) error) (operations.Outcome, error) {
	return e.m.Ledger().Claim(ctx, key, fp, resultID, func(tx *gorm.DB) error {
		if within != nil {
			if err := within(tx, &row); err != nil {
				return err
			}
		}
		now := nowUTC()
		first := now.Add(e.opts.Settle)
		row.TenantID, row.Action, row.OperationID = key.Tenant, key.Action, key.OperationID.String()
		row.Status, row.NextCheckAt, row.Duplicates, row.CreatedAt, row.UpdatedAt = tickets.DownstreamPending, &first, "[]", now, now
		if err := tx.Create(&row).Error; err != nil {
			return fmt.Errorf("%w: claim downstream: %v", tickets.ErrUnavailable, err)
		}
		if err := addHistory(tx, key, "claimed", actor, "claimed as pending before anything is sent to the tracker"); err != nil {
			return err
		}
		if e.opts.Scheduler == nil {
			return nil
		}
		if err := e.opts.Scheduler.Schedule(tx, key, first); err != nil {
			return fmt.Errorf("%w: schedule reconciliation: %v", tickets.ErrUnavailable, err)
		}
		return nil
	})
}

// trackedCall runs a tracker-backed write for key: it answers an existing
// record (reconciling an unsettled one first), or claims with claim, does
// the first round at once, and answers what that round proved. It returns
// the succeeded record, and whether an earlier call made it.
func (e *Engine) trackedCall(ctx context.Context, key operations.Key, fp string, claim func() (operations.Outcome, error)) (operations.Record, bool, error) {
	rec, err := e.m.Ledger().Lookup(ctx, key)
	switch {
	case err == nil:
		return e.answerExisting(ctx, key, rec, fp)
	case !errors.Is(err, operations.ErrNotFound):
		return rec, false, err
	}
	out, err := claim()
	if err != nil {
		if r := out.Record; r.Fingerprint != "" && (r.Status == operations.StatusPending || r.Status == operations.StatusUnknown || r.Status == operations.StatusSucceeded) {
			// A concurrent call claimed the key first.
			return e.answerExisting(ctx, key, r, fp)
		}
		return rec, false, err
	}
	var invalid *tickets.ValidationError
	switch _, err := e.reconcile(ctx, key, false); {
	case errors.As(err, &invalid):
		return rec, false, invalid // refused before anything was done, and recorded failed
	case err != nil:
		// Claimed, and the request may be out: never a failure.
		return rec, false, fmt.Errorf("%w: %v", operations.ErrOutcomeUnknown, err)
	}
	return e.recorded(ctx, key, false)
}

// answerExisting answers a call whose key already has a record: replays a
// success, reports a failure or a conflict, and reconciles a pending or
// unknown one before answering what it can prove.
func (e *Engine) answerExisting(ctx context.Context, key operations.Key, rec operations.Record, fp string) (operations.Record, bool, error) {
	if rec.Fingerprint != fp || rec.Status == operations.StatusFailed {
		_, err := operations.Answer(rec, fp)
		return rec, false, err
	}
	if rec.Status == operations.StatusPending || rec.Status == operations.StatusUnknown {
		busy, err := e.reconcile(ctx, key, false)
		if err != nil {
			return rec, false, fmt.Errorf("%w: %v", operations.ErrOutcomeUnknown, err)
		}
		if busy {
			return rec, false, fmt.Errorf("%w: another call is reconciling this operation with the tracker", operations.ErrInProgress)
		}
	}
	return e.recorded(ctx, key, true)
}

// recorded answers from the record as it now stands: the succeeded record,
// or the error that says what is known.
func (e *Engine) recorded(ctx context.Context, key operations.Key, replayed bool) (operations.Record, bool, error) {
	rec, err := e.m.Ledger().Lookup(ctx, key)
	if err != nil {
		return rec, false, fmt.Errorf("%w: %v", operations.ErrOutcomeUnknown, err)
	}
	switch rec.Status {
	case operations.StatusSucceeded:
		return rec, replayed, nil
	case operations.StatusFailed:
		return rec, false, fmt.Errorf("%w (key %s): %s", operations.ErrFailed, key, rec.Error)
	}
	d, err := e.downstream(ctx, key)
	if err != nil {
		return rec, false, fmt.Errorf("%w: %v", operations.ErrOutcomeUnknown, err)
	}
	next := "soon"
	if d.NextCheckAt != nil {
		next = d.NextCheckAt.UTC().Format(time.RFC3339)
	}
	if rec.Status == operations.StatusUnknown {
		if d.NextCheckAt == nil {
			return rec, false, fmt.Errorf("%w (key %s): %s; it waits for an operator (POST /api/v1/operations/%s/resolve)",
				operations.ErrOutcomeUnknown, key, deref(d.LastError), key.OperationID)
		}
		return rec, false, fmt.Errorf("%w (key %s): the tracker gave no definite answer (%s); ticketd reconciles before it sends again, next check %s",
			operations.ErrOutcomeUnknown, key, deref(d.LastError), next)
	}
	why := ""
	if d.LastError != nil {
		why = " (" + *d.LastError + ")"
	}
	return rec, false, fmt.Errorf("%w (key %s): the tracker has not confirmed it yet%s; next check %s",
		operations.ErrInProgress, key, why, next)
}

// success is what a round proved happened in the tracker.
type success struct {
	extID, extURL string
	dups          []tickets.Duplicate
	how, actor    string // the history entry's kind and actor
	note          string // an operator's reason, or what was proven
	resultID      string // the ledger's result on the first settling
}

// settleSuccess records sc on key: on the first settling the record moves
// to succeeded and mirror(tx, true) writes the local rows that mirror the
// tracker, in one transaction; a later duplicate check calls mirror(tx,
// false) to repoint them if needed.
func (e *Engine) settleSuccess(ctx context.Context, key operations.Key, row downstreamRow, sc success, mirror func(tx *gorm.DB, first bool) error) error {
	next := e.nextCheck(key, row, sc.dups)
	first := row.Status != tickets.DownstreamSucceeded
	return e.m.DB().WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if first {
			ok, err := operations.Settle(tx, key, operations.StatusSucceeded, sc.resultID, "")
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: operation %s", tickets.ErrSettled, key)
			}
		}
		if err := mirror(tx, first); err != nil {
			return err
		}
		err := tx.Model(&downstreamRow{}).Where(keyWhere(key)).Updates(map[string]any{
			"status": tickets.DownstreamSucceeded, "external_id": sc.extID, "external_url": sc.extURL, "next_check_at": next,
			"leased_until": nil, "duplicates": encodeDuplicates(sc.dups), "updated_at": nowUTC(),
		}).Error
		if err != nil {
			return fmt.Errorf("%w: record success: %v", tickets.ErrUnavailable, err)
		}
		return recordSuccessHistory(tx, key, row, sc)
	})
}

// nextCheck is when to look for duplicates after a success. Anything
// ticketd creates (an issue, a comment) gets one look a settle window after
// it is first proven, since a tracker may file one request twice; after a
// re-send the earlier request's copy may still surface in a lagging list,
// so the looks go on for a few settle windows past the last request. An
// edit makes nothing that could be doubled.
func (e *Engine) nextCheck(key operations.Key, row downstreamRow, dups []tickets.Duplicate) *time.Time {
	if key.Action == tickets.ActionUpdateTicket || row.LastSentAt == nil {
		return nil
	}
	n := time.Now().UTC().Add(e.opts.Settle)
	switch {
	case row.Status != tickets.DownstreamSucceeded:
		if after := row.LastSentAt.Add(e.opts.Settle); row.Attempts > 1 && after.After(n) {
			n = after
		}
		return &n
	case row.Attempts > 1 && n.Before(row.LastSentAt.Add(4*e.opts.Settle)):
		return &n
	case slices.ContainsFunc(dups, func(d tickets.Duplicate) bool { return !d.Closed }):
		return &n // one left to close
	}
	return nil
}

func recordSuccessHistory(tx *gorm.DB, key operations.Key, row downstreamRow, sc success) error {
	detail := fmt.Sprintf("%s %s (%s)", sc.how, sc.extID, sc.extURL)
	if row.Status == tickets.DownstreamSucceeded {
		detail = fmt.Sprintf("duplicate check: keeping %s", sc.extID)
	}
	if sc.note != "" {
		detail += ": " + sc.note
	}
	if err := addHistory(tx, key, sc.how, sc.actor, detail); err != nil {
		return err
	}
	closed := "closed"
	if key.Action == tickets.ActionAddComment {
		closed = "deleted"
	}
	for _, d := range sc.dups {
		if slices.ContainsFunc(row.duplicates(), func(k tickets.Duplicate) bool { return k == d }) {
			continue
		}
		verb := "found and " + closed
		if !d.Closed {
			verb = "found; removing it failed, retried at the next check"
		}
		if err := addHistory(tx, key, "duplicate", historyActor, fmt.Sprintf("duplicate %s %s; kept %s", d.ExternalID, verb, d.KeptID)); err != nil {
			return err
		}
	}
	return nil
}
