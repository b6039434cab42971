package tickets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/changelog"
	"github.com/ticketd/ticketd/internal/operations"
)

// EventKind says what a write did to a ticket.
type EventKind string

// The event kinds.
const (
	EventCreated   EventKind = "created"
	EventUpdated   EventKind = "updated"
	EventCommented EventKind = "commented"
)

// Change is one field's move (changelog.Change); Changes maps a field to
// its change.
type (
	Change  = changelog.Change
	Changes = changelog.Changes
)

var (
	encodeChanges = changelog.Encode
	decodeChanges = changelog.Decode
)

// Event is one entry of a ticket's history: every write leaves exactly one,
// in the write's own transaction.
type Event struct {
	ID          uuid.UUID
	TicketID    uuid.UUID
	Seq         int64 // position in the ticket's history, from 1, in commit order
	Version     int64 // the ticket's version after the write
	Kind        EventKind
	Actor       string
	OperationID uuid.UUID
	CommentID   *uuid.UUID // set for EventCommented
	Changes     Changes    // set for EventUpdated; empty for the others
	CreatedAt   time.Time
	// Approval is the person's yes the write needed (docs/contract.md#approval), when it
	// needed one; set by ListEvents.
	Approval *approval.Approval
}

type eventRow struct {
	ID          string    `gorm:"column:id;primaryKey"`
	TenantID    string    `gorm:"column:tenant_id"`
	TicketID    string    `gorm:"column:ticket_id"`
	Seq         int64     `gorm:"column:seq"`
	Version     int64     `gorm:"column:version"`
	Kind        string    `gorm:"column:kind"`
	Actor       string    `gorm:"column:actor"`
	OperationID string    `gorm:"column:operation_id"`
	CommentID   *string   `gorm:"column:comment_id"`
	Changes     string    `gorm:"column:changes"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (eventRow) TableName() string { return "ticket_events" }

// eventResult reads, with an update_ticket record, what its replay answers
// (eventRow.replayed): the event's ticket, version and changes. Few columns
// on purpose: the driver prepares a scan per column on every lookup, the
// fresh updates' that find no record included.
var eventResult = operations.NewJoin("ticket_events", []string{"ticket_id", "version", "changes"})

// replayColumns returns scan targets for eventResult's columns, in order.
func (r *eventRow) replayColumns() []any { return []any{&r.TicketID, &r.Version, &r.Changes} }

// replayed is the event of a row read through eventResult: its ticket,
// version and changes.
func (r eventRow) replayed() (Event, error) {
	ticketID, err := uuid.Parse(r.TicketID)
	if err != nil {
		return Event{}, fmt.Errorf("event row: bad ticket_id %q: %w", r.TicketID, err)
	}
	changes, err := decodeChanges(r.Changes)
	if err != nil {
		return Event{}, fmt.Errorf("event row of ticket %s: %w", r.TicketID, err)
	}
	return Event{TicketID: ticketID, Version: r.Version, Changes: changes}, nil
}

func (r eventRow) toEvent() (Event, error) {
	ids, err := parseUUIDs(r.ID, r.TicketID, r.OperationID)
	if err != nil {
		return Event{}, fmt.Errorf("event row %s: %w", r.ID, err)
	}
	changes, err := decodeChanges(r.Changes)
	if err != nil {
		return Event{}, fmt.Errorf("event row %s: %w", r.ID, err)
	}
	e := Event{
		ID: ids[0], TicketID: ids[1], Seq: r.Seq, Version: r.Version, Kind: EventKind(r.Kind), Actor: r.Actor,
		OperationID: ids[2], Changes: changes, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.CommentID != nil {
		c, err := uuid.Parse(*r.CommentID)
		if err != nil {
			return Event{}, fmt.Errorf("event row %s: bad comment_id: %w", r.ID, err)
		}
		e.CommentID = &c
	}
	return e, nil
}

func parseUUIDs(texts ...string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, len(texts))
	for i, s := range texts {
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, fmt.Errorf("bad UUID %q: %w", s, err)
		}
		out[i] = id
	}
	return out, nil
}

// nextSeq allocates the ticket's next history position. The caller holds
// the ticket's row lock (lockTicket), so positions follow commit order.
func nextSeq(tx *gorm.DB, tenant string, ticketID uuid.UUID) (int64, error) {
	var seq int64
	if err := tx.Raw(`SELECT COALESCE(MAX(seq), 0) + 1 FROM ticket_events WHERE tenant_id = ? AND ticket_id = ?`,
		tenant, ticketID.String()).Scan(&seq).Error; err != nil {
		return 0, fmt.Errorf("%w: allocate history position: %v", ErrUnavailable, err)
	}
	return seq, nil
}

// insertEvent writes e (its Seq from nextSeq) into the ticket's history.
func insertEvent(tx *gorm.DB, tenant string, e Event) error {
	changes, err := encodeChanges(e.Changes)
	if err != nil {
		return err
	}
	row := eventRow{
		ID: e.ID.String(), TenantID: tenant, TicketID: e.TicketID.String(), Seq: e.Seq, Version: e.Version,
		Kind: string(e.Kind), Actor: e.Actor, OperationID: e.OperationID.String(), Changes: changes, CreatedAt: e.CreatedAt,
	}
	if e.CommentID != nil {
		c := e.CommentID.String()
		row.CommentID = &c
	}
	if err := tx.Create(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return eventExpired(e.Kind)
		}
		return fmt.Errorf("%w: insert event: %v", ErrUnavailable, err)
	}
	return nil
}

// eventExpired is the error of an event insert that met a duplicate key.
// Only the unique (tenant, kind, operation_id, ticket) index can fire there
// (the ID and seq are fresh): this operation already left its event and its
// record has been pruned since. Writing it again would apply the operation
// twice.
func eventExpired(kind EventKind) error {
	return fmt.Errorf("%w: the ticket's history already holds a %q event for this operation ID", operations.ErrExpired, kind)
}

// enqueue hands a write's event to the outbox inside the write's
// transaction; with no outbox it does nothing. A failure rolls the write
// back: a committed write is always told.
func (s *Service) enqueue(tx *gorm.DB, ev WriteEvent) error {
	if s.outbox == nil {
		return nil
	}
	if err := s.outbox.Enqueue(tx, ev); err != nil {
		return fmt.Errorf("%w: enqueue %s event: %v", ErrUnavailable, ev.Kind, err)
	}
	return nil
}

func (s *Service) eventByID(ctx context.Context, tenant, id string) (Event, error) {
	var row eventRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, id).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return Event{}, fmt.Errorf("event: %w", ErrNotFound)
	case err != nil:
		return Event{}, fmt.Errorf("%w: read event: %v", ErrUnavailable, err)
	}
	return row.toEvent()
}

// ListParams pages a ticket's comments or events.
type ListParams struct {
	Limit  int    // 1..MaxLimit; 0 means DefaultLimit
	Cursor string // from a previous page's NextCursor
}

// EventPage is one page of a ticket's history, oldest first.
type EventPage struct {
	Events     []Event
	NextCursor string
}

type seqPosition struct {
	Seq int64 `json:"s"`
}

// ListEvents returns the history of the tenant's ticket (UUID or key), oldest
// first, a page at a time; a page also ends early at MaxPageBytes.
//
// Errors: ErrInvalid (bad reference, limit or cursor), ErrNotFound, ErrUnavailable.
func (s *Service) ListEvents(ctx context.Context, tenant, ticketRef string, p ListParams) (EventPage, error) {
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return EventPage{}, err
	}
	items, next, err := listBySeq(ctx, s, "events", tenant, t.ID, p, func(r eventRow) (Event, error) { return r.toEvent() },
		func(r eventRow) int64 { return r.Seq })
	if err != nil {
		return EventPage{}, err
	}
	if err := s.withApprovals(ctx, tenant, items); err != nil {
		return EventPage{}, err
	}
	return EventPage{Events: items, NextCursor: next}, nil
}

// withApprovals names, on each event whose write needed a person's yes,
// who gave it, how and when.
func (s *Service) withApprovals(ctx context.Context, tenant string, events []Event) error {
	if s.approvals == nil || len(events) == 0 {
		return nil
	}
	ids := make([]uuid.UUID, len(events))
	for i, e := range events {
		ids[i] = e.OperationID
	}
	byOp, err := s.approvals.ForOperations(ctx, tenant, ids)
	if err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	for i := range events {
		if a, ok := byOp[events[i].OperationID]; ok {
			events[i].Approval = &a
		}
	}
	return nil
}

// listBySeq pages a ticket's rows of R (events or comments) in seq order,
// the cursor bound to the tenant, the ticket and the kind of row.
func listBySeq[R any, T any](ctx context.Context, s *Service, what, tenant string, ticketID uuid.UUID, p ListParams,
	convert func(R) (T, error), seqOf func(R) int64) ([]T, string, error) {
	limit, err := pageLimit(p.Limit)
	if err != nil {
		return nil, "", err
	}
	scope := strings.Join([]string{what, tenant, ticketID.String()}, "\x00")
	var start seqPosition
	if p.Cursor != "" {
		if err := s.cursors.Decode(scope, p.Cursor, &start); err != nil {
			return nil, "", invalidField("cursor", "not a cursor issued for this list; start again without one")
		}
	}
	fetch := func(after *R, n int) ([]R, error) {
		from := start.Seq
		if after != nil {
			from = seqOf(*after)
		}
		var rows []R
		if err := s.reads.WithContext(ctx).Where("tenant_id = ? AND ticket_id = ? AND seq > ?", tenant, ticketID.String(), from).
			Order("seq").Limit(n).Find(&rows).Error; err != nil {
			return nil, fmt.Errorf("%w: list %s: %v", ErrUnavailable, what, err)
		}
		return rows, nil
	}
	items, last, more, err := fillPage(limit, fetch, convert)
	if err != nil || !more {
		return items, "", err
	}
	next, err := s.cursors.Encode(scope, seqPosition{Seq: seqOf(*last)})
	return items, next, err
}
