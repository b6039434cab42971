package tickets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/operations"
)

// OperationStatus is the authoritative answer to "what became of this
// operation ID?" for one tenant.
type OperationStatus struct {
	Record operations.Record
	Ticket *Ticket // the created ticket, when the operation succeeded
}

// GetOperation returns the tenant's record for operationID and, when it
// succeeded, the ticket it created. operations.ErrNotFound is authoritative
// proof that nothing ran under that ID for this tenant; another tenant's use
// of the same ID is invisible.
//
// Errors: ErrInvalid (malformed ID), operations.ErrNotFound, operations.ErrUnavailable.
func (s *Service) GetOperation(ctx context.Context, tenant, operationID string) (OperationStatus, error) {
	id, err := operations.ParseID(operationID)
	if err != nil {
		return OperationStatus{}, invalidField("operation_id", "%v", err)
	}
	rec, err := s.ledger.Find(ctx, tenant, id)
	if err != nil {
		return OperationStatus{}, fmt.Errorf("get operation: %w", err)
	}
	return s.withTicket(ctx, tenant, rec)
}

func (s *Service) withTicket(ctx context.Context, tenant string, rec operations.Record) (OperationStatus, error) {
	st := OperationStatus{Record: rec}
	if rec.Status != operations.StatusSucceeded || rec.Action != ActionCreateTicket || rec.ResultID == "" {
		return st, nil
	}
	t, err := s.ticketByID(ctx, tenant, rec.ResultID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return OperationStatus{}, fmt.Errorf("get operation: %w", err)
	}
	if err == nil {
		st.Ticket = &t
	}
	return st, nil
}

// ListOperationsParams filters and pages ListOperations.
type ListOperationsParams struct {
	Status operations.Status // optional
	Limit  int
	Cursor string
}

// OperationPage is one page of operation records, newest first.
type OperationPage struct {
	Operations []operations.Record
	NextCursor string
}

var operationStatuses = []operations.Status{
	operations.StatusPending, operations.StatusSucceeded, operations.StatusFailed, operations.StatusUnknown,
}

// ListOperations lists the tenant's operation records, newest first, so an
// operator can find unknown or pending ones.
//
// Errors: ErrInvalid, operations.ErrUnavailable.
func (s *Service) ListOperations(ctx context.Context, tenant string, p ListOperationsParams) (OperationPage, error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return OperationPage{}, err
	}
	status := operations.Status(strings.TrimSpace(string(p.Status)))
	if status != "" && !slices.Contains(operationStatuses, status) {
		return OperationPage{}, invalidField("status", "must be one of pending, succeeded, failed, unknown; got %q", p.Status)
	}
	scope := strings.Join([]string{"operations", tenant, string(status)}, "\x00")
	var after *operations.Position
	if p.Cursor != "" {
		after = new(operations.Position)
		if err := s.cursors.Decode(scope, p.Cursor, after); err != nil {
			return OperationPage{}, invalidField("cursor", "not a cursor issued for this list; start again without one")
		}
	}
	recs, err := s.ledger.List(ctx, tenant, status, after, limit+1)
	if err != nil {
		return OperationPage{}, fmt.Errorf("list operations: %w", err)
	}
	page := OperationPage{Operations: recs}
	if len(recs) > limit {
		page.Operations = recs[:limit]
		last := recs[limit-1]
		page.NextCursor, err = s.cursors.Encode(scope, operations.Position{
			CreatedAt: last.CreatedAt, Action: last.Action, OperationID: last.OperationID.String()})
		if err != nil {
			return OperationPage{}, err
		}
	}
	return page, nil
}
