package tickets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/operations"
)

// ActionLinkTickets is the ledger action of LinkTickets.
const ActionLinkTickets = "link_tickets"

// The history kinds of a link change, one on each end.
const (
	EventLinked   EventKind = "linked"
	EventUnlinked EventKind = "unlinked"
)

// LinkChange is the caller's intent for link_tickets: ticket Ticket is
// Kind of Target (both a UUID or a key), or no longer is when Remove.
type LinkChange struct {
	Ticket string
	Kind   links.Kind
	Target string
	Remove bool
}

// LinkResult is the outcome of LinkTickets.
type LinkResult struct {
	OperationID uuid.UUID
	// Ticket is the ticket the call named and Links its links as they are now.
	Ticket Ticket
	Links  []links.Link
	// Changed says the operation added or removed the link; false when it
	// was already as asked.
	Changed  bool
	Replayed bool
}

// linkFingerprint identifies a link_tickets intent: both resolved tickets,
// the kind and whether it is a removal.
func linkFingerprint(from, to uuid.UUID, kind links.Kind, remove bool) string {
	canonical, err := json.Marshal(struct {
		TicketID string     `json:"ticket_id"`
		Link     links.Kind `json:"link"`
		TargetID string     `json:"target_id"`
		Remove   bool       `json:"remove"`
	}{from.String(), kind, to.String(), remove})
	if err != nil {
		panic(fmt.Sprintf("marshal fingerprint input: %v", err)) // strings and a bool only: cannot fail
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// LinkTickets adds (or, with Remove, removes) one link per (tenant,
// operation ID) between two of the tenant's tickets, of any projects: a
// retry with the same ID and input answers with Replayed set and changes
// nothing again. The link, a linked or unlinked event in each ticket's
// history and the operation record commit in one transaction; neither
// ticket's version changes. Adding a link that is there already, or
// removing one that is not, succeeds with Changed false.
//
// Errors: ErrInvalid (bad kind or reference, a self-link, a blocks cycle,
// too many links; nothing recorded), ErrNotFound (either ticket, another
// tenant's included), operations.ErrConflict, operations.ErrInProgress,
// operations.ErrOutcomeUnknown, ErrUnavailable, operations.ErrUnavailable.
func (s *Service) LinkTickets(ctx context.Context, c Caller, opID operations.ID, in LinkChange) (res LinkResult, err error) {
	defer func() { s.report(ActionLinkTickets, res.Replayed, err) }()
	if err := requireID(opID); err != nil {
		return LinkResult{}, err
	}
	id := opID.UUID()
	kind, err := links.ParseKind(string(in.Kind))
	if err != nil {
		return LinkResult{OperationID: id}, err
	}
	if err := checkActor(c.Subject); err != nil {
		return LinkResult{OperationID: id}, err
	}
	if err := s.enroll(ctx, c); err != nil {
		return LinkResult{OperationID: id}, err
	}
	from, err := s.GetTicket(ctx, c.Tenant, in.Ticket)
	if err != nil {
		return LinkResult{OperationID: id}, fmt.Errorf("link tickets: %w", err)
	}
	to, err := s.GetTicket(ctx, c.Tenant, in.Target)
	if err != nil {
		return LinkResult{OperationID: id}, fmt.Errorf("link tickets: target: %w", err)
	}
	if from.ID == to.ID {
		return LinkResult{OperationID: id}, invalidField("target", "a ticket cannot be linked to itself (%s)", from.Key)
	}
	key := operations.Key{Tenant: c.Tenant, Action: ActionLinkTickets, OperationID: id}
	eventID := uuid.Must(uuid.NewV7())
	change := linkWrite{tenant: c.Tenant, actor: c.Subject, opID: id, eventID: eventID, kind: kind, from: from, to: to, remove: in.Remove}
	out, err := s.ledger.Run(ctx, key, linkFingerprint(from.ID, to.ID, kind, in.Remove), from.ID.String(), func(tx *gorm.DB) error {
		changed, err := s.writeLink(tx, change)
		res.Changed = changed
		return err
	})
	if err != nil {
		return LinkResult{OperationID: id}, fmt.Errorf("link tickets %s %s %s: %w", from.Key, kind, to.Key, err)
	}
	res.OperationID, res.Ticket, res.Replayed = id, from, out.Replayed
	if out.Replayed {
		if res.Changed, err = s.operationLeftEvent(ctx, c.Tenant, id, from.ID); err != nil {
			return LinkResult{OperationID: id}, fmt.Errorf("link tickets: %w", err)
		}
	}
	if res.Links, err = s.TicketLinks(ctx, c.Tenant, from.ID); err != nil {
		return LinkResult{OperationID: id}, fmt.Errorf("link tickets: %w", err)
	}
	return res, nil
}

// linkWrite is one link change as the ledger's transaction makes it.
type linkWrite struct {
	tenant, actor string
	opID, eventID uuid.UUID
	kind          links.Kind
	from, to      Ticket
	remove        bool
}

// writeLink locks both tickets (in ID order, so two links of one pair never
// deadlock), checks the change, writes it and, when it changed something,
// one event on each end and the outbox's event. It reports whether the
// link changed.
func (s *Service) writeLink(tx *gorm.DB, w linkWrite) (bool, error) {
	rows, err := lockTickets(tx, w.tenant, w.from.ID, w.to.ID)
	if err != nil {
		return false, err
	}
	at := time.Now().UTC().Truncate(time.Microsecond)
	changed, err := links.Write(tx, links.Change{Tenant: w.tenant, Kind: w.kind, From: w.from.ID, To: w.to.ID,
		OperationID: w.opID, At: at, Remove: w.remove})
	if err != nil || !changed {
		return false, err
	}
	kind := EventLinked
	if w.remove {
		kind = EventUnlinked
	}
	ends := []struct {
		row     ticketRow
		eventID uuid.UUID
		said    string
	}{
		{rows[w.from.ID], w.eventID, string(w.kind) + " " + w.to.Key},
		{rows[w.to.ID], uuid.Must(uuid.NewV7()), string(w.kind.Inverse()) + " " + w.from.Key},
	}
	var sourceChanges Changes
	for i, end := range ends {
		change := Change{To: end.said}
		if w.remove {
			change = Change{From: end.said}
		}
		changes := Changes{"link": change}
		if i == 0 {
			sourceChanges = changes
		}
		if err := appendEvent(tx, end.row, end.eventID, w.opID, w.actor, kind, changes, at); err != nil {
			return false, err
		}
	}
	return true, s.enqueue(tx, WriteEvent{ID: w.eventID, Tenant: w.tenant, Kind: kind, OperationID: w.opID, At: at,
		Ticket: w.from, Changes: sourceChanges})
}

// appendEvent writes an event at the next position of the locked ticket's
// history, at the ticket's version.
func appendEvent(tx *gorm.DB, row ticketRow, eventID, opID uuid.UUID, actor string, kind EventKind, changes Changes, at time.Time) error {
	t, err := row.toTicket()
	if err != nil {
		return err
	}
	seq, err := nextSeq(tx, row.TenantID, t.ID)
	if err != nil {
		return err
	}
	return insertEvent(tx, row.TenantID, Event{ID: eventID, TicketID: t.ID, Seq: seq, Version: t.Version, Kind: kind,
		Actor: actor, OperationID: opID, Changes: changes, CreatedAt: at})
}

// lockTickets locks the tenant's tickets in ID order and returns their rows.
func lockTickets(tx *gorm.DB, tenant string, ids ...uuid.UUID) (map[uuid.UUID]ticketRow, error) {
	sorted := slices.Clone(ids)
	slices.SortFunc(sorted, func(a, b uuid.UUID) int { return strings.Compare(a.String(), b.String()) })
	out := make(map[uuid.UUID]ticketRow, len(ids))
	for _, id := range sorted {
		row, err := lockTicket(tx, tenant, id)
		if err != nil {
			return nil, err
		}
		out[id] = row
	}
	return out, nil
}

// TicketLinks returns the links of the tenant's ticket (links.Of).
//
// Errors: ErrUnavailable.
func (s *Service) TicketLinks(ctx context.Context, tenant string, ticketID uuid.UUID) ([]links.Link, error) {
	return links.Of(s.db.WithContext(ctx), tenant, ticketID)
}

// operationLeftEvent reports whether the operation left an event in the
// ticket's history: whether a replayed link_tickets changed anything.
func (s *Service) operationLeftEvent(ctx context.Context, tenant string, opID, ticketID uuid.UUID) (bool, error) {
	var n int64
	if err := s.db.WithContext(ctx).Model(&eventRow{}).
		Where("tenant_id = ? AND operation_id = ? AND ticket_id = ?", tenant, opID.String(), ticketID.String()).
		Count(&n).Error; err != nil {
		return false, fmt.Errorf("%w: read event: %v", ErrUnavailable, err)
	}
	return n > 0, nil
}
