package tickets

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/operations"
)

// OperationStatus is the authoritative answer to "what became of this
// operation ID?" for one tenant.
type OperationStatus struct {
	Record operations.Record
	// For a succeeded operation of any action: the ticket it created or acted
	// on, and that ticket as it is now (nil if it can no longer be read).
	TicketID *uuid.UUID
	Ticket   *Ticket
	// Version is the version an update_ticket produced.
	Version int64
	// CommentID is the comment an add_comment added.
	CommentID *uuid.UUID
	// Deliveries says what the outside world has been told of the write's
	// event, one per webhook it matched (none without an outbox).
	Deliveries []Delivery
	// Downstream is what is known of the operation's effect in a tracker
	// (tracker-backed projects only), and History its reconciliation steps
	// and operators' findings, oldest first.
	Downstream *Downstream
	History    []HistoryEntry
	// Approval is the person's yes the write needed (docs/contract.md#approval), when it
	// needed one.
	Approval *approval.Approval
}

// GetOperation returns the tenant's record for operationID and, when it
// succeeded, what it made: the ticket for every action, the version for
// update_ticket, the comment for add_comment. A write whose record was
// pruned answers its tombstone, status expired: it ran, and what it made is
// no longer recorded. operations.ErrNotFound is authoritative proof that
// nothing ran under that ID for this tenant; another tenant's use of the
// same ID (its record or its tombstone) is invisible.
//
// Errors: ErrInvalid (the zero ID), operations.ErrNotFound, ErrUnavailable,
// operations.ErrUnavailable.
func (s *Service) GetOperation(ctx context.Context, tenant string, id operations.ID) (OperationStatus, error) {
	if err := requireID(id); err != nil {
		return OperationStatus{}, err
	}
	rec, err := s.ledger.Find(ctx, tenant, id.UUID())
	if err != nil {
		return OperationStatus{}, fmt.Errorf("get operation: %w", err)
	}
	return s.statusOf(ctx, tenant, rec)
}

// statusOf builds the whole answer about one record.
func (s *Service) statusOf(ctx context.Context, tenant string, rec operations.Record) (OperationStatus, error) {
	id := rec.OperationID
	st, err := s.outcome(ctx, tenant, rec)
	if err != nil {
		return OperationStatus{}, fmt.Errorf("get operation: %w", err)
	}
	if s.trackers != nil {
		if err := s.trackers.Status(ctx, &st); err != nil {
			return OperationStatus{}, fmt.Errorf("get operation: %w", err)
		}
	}
	if rec.ApprovalID != "" && s.approvals != nil {
		a, err := s.approvals.Lookup(ctx, tenant, rec.ApprovalID)
		if err != nil {
			return OperationStatus{}, fmt.Errorf("get operation: %w", err)
		}
		st.Approval = &a
	}
	if s.deliveries != nil && rec.Status == operations.StatusSucceeded {
		if st.Deliveries, err = s.deliveries.OperationDeliveries(ctx, tenant, id); err != nil {
			return OperationStatus{}, fmt.Errorf("%w: get operation: deliveries: %v", ErrUnavailable, err)
		}
	}
	return st, nil
}

// outcome reads what a succeeded record's result_id points at: a ticket
// (create_ticket, link_tickets: the ticket the call named), an event (update_ticket) or a comment (add_comment).
func (s *Service) outcome(ctx context.Context, tenant string, rec operations.Record) (OperationStatus, error) {
	st := OperationStatus{Record: rec}
	if rec.Status != operations.StatusSucceeded || rec.ResultID == "" {
		return st, nil
	}
	var ticketID string
	switch rec.Action {
	case ActionCreateTicket, ActionLinkTickets:
		ticketID = rec.ResultID
	case ActionUpdateTicket:
		ev, err := s.eventByID(ctx, tenant, rec.ResultID)
		if err != nil {
			return OperationStatus{}, err
		}
		ticketID, st.Version = ev.TicketID.String(), ev.Version
	case ActionAddComment:
		c, err := s.commentByID(ctx, tenant, rec.ResultID)
		if err != nil {
			return OperationStatus{}, err
		}
		ticketID, st.CommentID = c.TicketID.String(), &c.ID
	default:
		return st, nil
	}
	tid, err := uuid.Parse(ticketID)
	if err != nil {
		return OperationStatus{}, fmt.Errorf("operation %s: bad ticket ID %q: %w", rec.Key, ticketID, err)
	}
	st.TicketID = &tid
	t, err := s.ticketByID(ctx, tenant, ticketID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return OperationStatus{}, err
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
// Errors: ErrInvalid, ErrUnavailable.
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
