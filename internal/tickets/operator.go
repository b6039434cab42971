package tickets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/operations"
)

// What an operator can find about an operation (docs/contract.md#tracker-backed-projects).
const (
	// ResolveSucceeded: it happened; ExternalID names the tracker issue.
	ResolveSucceeded = "succeeded"
	// ResolveNotCreated: it did not happen.
	ResolveNotCreated = "not_created"
)

// MaxReason is the longest reason an operator may give, in characters.
const MaxReason = 2000

// Resolution is an operator's finding about an unknown or pending
// operation, recorded with who found it and why.
type Resolution struct {
	Outcome    string // ResolveSucceeded or ResolveNotCreated
	ExternalID string // with ResolveSucceeded: "owner/name#12", "#12" or "12"
	Reason     string
}

// findOperation returns the tenant's record for operationID: under action
// when given, else under the newest action that used the ID (as
// GetOperation resolves it).
func (s *Service) findOperation(ctx context.Context, tenant string, opID operations.ID, action string) (operations.Record, error) {
	if err := requireID(opID); err != nil {
		return operations.Record{}, err
	}
	id := opID.UUID()
	if action = strings.TrimSpace(action); action != "" {
		if !slices.Contains(Actions(), action) {
			return operations.Record{}, invalidField("action", "must be one of %s", strings.Join(Actions(), ", "))
		}
		rec, err := s.ledger.Lookup(ctx, operations.Key{Tenant: tenant, Action: action, OperationID: id})
		if errors.Is(err, operations.ErrExpired) {
			// A pruned write's tombstone, status expired, as Find answers it.
			return rec, nil
		}
		return rec, err
	}
	return s.ledger.Find(ctx, tenant, id)
}

// ReconcileOperation runs reconciliation of one operation now, on behalf of
// actor, and returns its status afterwards. A tracker-backed operation is
// checked against the tracker (a settled one for duplicates); a local one
// needs nothing: its record commits with the write, so it is authoritative.
//
// Errors: ErrInvalid, operations.ErrNotFound, operations.ErrInProgress
// (another worker holds it), ErrUnavailable.
func (s *Service) ReconcileOperation(ctx context.Context, c Caller, id operations.ID, action string) (OperationStatus, error) {
	tenant, actor := c.Tenant, c.Subject
	rec, err := s.findOperation(ctx, tenant, id, action)
	if err != nil {
		return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
	}
	if rec.Status == operations.StatusExpired {
		// Pruned: it succeeded long ago, and nothing is left to reconcile.
		return s.statusOf(ctx, tenant, rec)
	}
	if s.trackers != nil {
		ok, err := s.trackers.Reconcile(ctx, rec.Key, actor)
		if err != nil {
			return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
		}
		if ok {
			if rec, err = s.ledger.Lookup(ctx, rec.Key); err != nil {
				return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
			}
		}
	}
	return s.statusOf(ctx, tenant, rec)
}

// ResolveOperation records an operator's finding about an operation that is
// unknown or pending: it happened (with the tracker issue or comment it made, or the issue it edited) or it did
// not. The finding is audited in the operation's history (actor, time,
// reason), and every later retry of the operation ID answers it.
//
// Errors: ErrInvalid, operations.ErrNotFound, ErrSettled (not unknown or
// pending), operations.ErrInProgress, ErrUnavailable.
func (s *Service) ResolveOperation(ctx context.Context, c Caller, id operations.ID, action string, r Resolution) (OperationStatus, error) {
	tenant, actor := c.Tenant, c.Subject
	r.Outcome, r.ExternalID, r.Reason = strings.TrimSpace(r.Outcome), strings.TrimSpace(r.ExternalID), strings.TrimSpace(r.Reason)
	var errs []FieldError
	switch missing := r.ExternalID == ""; {
	case r.Outcome == ResolveSucceeded && missing:
		errs = append(errs, FieldError{Field: "external_id", Message: "is required with outcome succeeded: the tracker issue, e.g. owner/name#12"})
	case r.Outcome == ResolveNotCreated && !missing:
		errs = append(errs, FieldError{Field: "external_id", Message: "must be absent with outcome not_created"})
	case r.Outcome != ResolveSucceeded && r.Outcome != ResolveNotCreated:
		errs = append(errs, FieldError{Field: "outcome", Message: "must be succeeded or not_created"})
	}
	if msg := checkText(r.Reason); msg != "" {
		errs = append(errs, FieldError{Field: "reason", Message: msg})
	} else if n := utf8.RuneCountInString(r.Reason); n == 0 || n > MaxReason {
		errs = append(errs, FieldError{Field: "reason", Message: fmt.Sprintf("must be 1–%d characters: say why you believe it", MaxReason)})
	}
	if err := checkActor(actor); err != nil {
		return OperationStatus{}, err
	}
	if len(errs) > 0 {
		return OperationStatus{}, &ValidationError{Fields: errs}
	}
	rec, err := s.findOperation(ctx, tenant, id, action)
	if err != nil {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w", err)
	}
	if rec.Status != operations.StatusPending && rec.Status != operations.StatusUnknown {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w: it is %s, and only an unknown or pending operation can be resolved", ErrSettled, rec.Status)
	}
	ok := false
	if s.trackers != nil {
		if ok, err = s.trackers.Resolve(ctx, rec.Key, actor, r); err != nil {
			return OperationStatus{}, fmt.Errorf("resolve operation: %w", err)
		}
	}
	if !ok {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w",
			invalidField("operation_id", "this operation made no request to a tracker; its record is authoritative and cannot be resolved"))
	}
	if rec, err = s.ledger.Lookup(ctx, rec.Key); err != nil {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w", err)
	}
	return s.statusOf(ctx, tenant, rec)
}

// ReconcileDue runs one round of reconciliation for the job queue
// (internal/reconciler): it reports when to look again, or done once
// nothing is left to check. A local operation has nothing to reconcile.
//
// Errors: ErrUnavailable (retry later).
func (s *Service) ReconcileDue(ctx context.Context, key operations.Key) (next time.Time, done bool, err error) {
	if s.trackers == nil {
		return time.Time{}, true, nil
	}
	return s.trackers.ReconcileDue(ctx, key)
}
