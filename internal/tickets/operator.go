package tickets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"gorm.io/gorm"

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
	if _, err := s.downstream(ctx, rec.Key); err == nil {
		err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			return addHistory(tx, rec.Key, "reconcile_requested", actor, "an operator asked for reconciliation now")
		})
		if err != nil {
			return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
		}
		busy, err := s.reconcile(ctx, rec.Key, true)
		switch {
		case err != nil && !errors.Is(err, ErrSettled):
			return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
		case busy:
			return OperationStatus{}, fmt.Errorf("reconcile operation: %w: another worker is reconciling it now", operations.ErrInProgress)
		}
		if rec, err = s.ledger.Lookup(ctx, rec.Key); err != nil {
			return OperationStatus{}, fmt.Errorf("reconcile operation: %w", err)
		}
	} else if !errors.Is(err, gorm.ErrRecordNotFound) {
		return OperationStatus{}, fmt.Errorf("reconcile operation: %w: %v", ErrUnavailable, err)
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
	switch r.Outcome {
	case ResolveSucceeded:
		if r.ExternalID == "" {
			errs = append(errs, FieldError{"external_id", "is required with outcome succeeded: the tracker issue, e.g. owner/name#12"})
		}
	case ResolveNotCreated:
		if r.ExternalID != "" {
			errs = append(errs, FieldError{"external_id", "must be absent with outcome not_created"})
		}
	default:
		errs = append(errs, FieldError{"outcome", "must be succeeded or not_created"})
	}
	if msg := checkText(r.Reason); msg != "" {
		errs = append(errs, FieldError{"reason", msg})
	} else if n := utf8.RuneCountInString(r.Reason); n == 0 || n > MaxReason {
		errs = append(errs, FieldError{"reason", fmt.Sprintf("must be 1–%d characters: say why you believe it", MaxReason)})
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
	if err := s.resolve(ctx, rec.Key, actor, r); err != nil {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w", err)
	}
	s.count(ReconcileResolved)
	if rec, err = s.ledger.Lookup(ctx, rec.Key); err != nil {
		return OperationStatus{}, fmt.Errorf("resolve operation: %w", err)
	}
	return s.statusOf(ctx, tenant, rec)
}

func (s *Service) resolve(ctx context.Context, key operations.Key, actor string, r Resolution) error {
	switch _, err := s.downstream(ctx, key); {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return invalidField("operation_id", "this operation made no request to a tracker; its record is authoritative and cannot be resolved")
	case err != nil:
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	row, ok, busy, err := s.lease(ctx, key, false)
	switch {
	case err != nil:
		return err
	case busy:
		return fmt.Errorf("%w: another worker is reconciling it now; try again shortly", operations.ErrInProgress)
	case !ok:
		return fmt.Errorf("%w: it was settled meanwhile", ErrSettled)
	}
	if r.Outcome == ResolveNotCreated {
		return s.fail(ctx, key, fmt.Sprintf("not created (resolved by %s: %s)", actor, r.Reason), "resolved", actor)
	}
	if err := s.resolveFound(ctx, key, row, actor, r); err != nil {
		return errors.Join(s.release(ctx, key, row, nil), err)
	}
	return nil
}

// issueNumber reads "owner/name#12", "#12" or "12" as an issue of repo.
func issueNumber(repo, ref string) (int64, error) {
	num := ref
	if r, n, ok := strings.Cut(ref, "#"); ok {
		if r != "" && !strings.EqualFold(r, repo) {
			return 0, invalidField("external_id", "names an issue of %s, but this project's tickets live in %s", r, repo)
		}
		num = n
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 {
		return 0, invalidField("external_id", "must be an issue of %s: owner/name#12, #12 or 12", repo)
	}
	return n, nil
}
