package operations

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// Claim records key as pending and commits, together with what within
// writes in the same transaction, before the caller performs a side effect
// outside the database (a call to a tracker that cannot deduplicate): a
// crash after the claim leaves a visible pending record, never a silent gap.
// The caller later moves the record on with Settle.
//
// An existing record for key is answered as Run answers it: ErrConflict for
// another fingerprint, the recorded success as a replay, ErrFailed, and
// ErrInProgress or ErrOutcomeUnknown for a pending or unknown record, whose
// Record the Outcome carries so the caller can reconcile it.
//
// Errors: those of Run.
func (l *Ledger) Claim(ctx context.Context, key Key, fingerprint, resultID string, within WriteFunc) (Outcome, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.opts.WriteTimeout)
	defer cancel()
	return l.claimAndWrite(wctx, key, fingerprint, resultID, StatusPending, false, nil, func(tx *gorm.DB, _ *Fold) error { return within(tx) })
}

// Settle moves key's record from pending or unknown to status, through tx,
// recording resultID (a success) or errText (a failure). It reports false
// when the record was no longer pending or unknown (someone settled it
// first), in which case nothing changed.
func Settle(tx *gorm.DB, key Key, status Status, resultID, errText string) (bool, error) {
	updates := map[string]any{"status": string(status), "updated_at": time.Now().UTC().Truncate(time.Microsecond)}
	if resultID != "" {
		updates["result_id"] = resultID
	}
	if errText != "" {
		updates["error"] = errText
	}
	res := tx.Model(&record{}).Where(keyClause(key)).
		Where("status IN ?", []string{string(StatusPending), string(StatusUnknown)}).Updates(updates)
	if res.Error != nil {
		return false, fmt.Errorf("%w: settle operation %s: %v", ErrUnavailable, key, res.Error)
	}
	return res.RowsAffected == 1, nil
}

// Answer turns an existing record into the reply to a call that brought
// fingerprint, exactly as Run does.
func Answer(rec Record, fingerprint string) (Outcome, error) { return answer(rec, fingerprint) }
