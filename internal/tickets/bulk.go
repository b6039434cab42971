package tickets

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
)

// ActionBulkUpdateTickets is the ledger action of BulkUpdateTickets.
const ActionBulkUpdateTickets = "bulk_update_tickets"

// MaxBulk is the most tickets one bulk update may name.
const MaxBulk = 100

// BulkUpdate is the caller's intent for bulk_update_tickets: one update
// applied to every ticket it names.
type BulkUpdate struct {
	// Refs names the tickets (UUIDs or keys), 1 to MaxBulk, each once.
	Refs []string
	// IfVersions optionally pins tickets to the version the caller read,
	// keyed by the reference as given in Refs.
	IfVersions map[string]int64
	// Update is the change; its IfVersion must be nil (use IfVersions).
	Update TicketUpdate
}

// BulkItem is one ticket's part of a bulk update.
type BulkItem struct {
	// Version is the version this operation produced for the ticket and
	// Changes what it changed; on a replay both are the original's.
	Version int64
	Changes Changes
	// Ticket is the ticket as it is now.
	Ticket Ticket
}

// BulkResult is the outcome of BulkUpdateTickets: one item per ticket, in
// the order the caller named them.
type BulkResult struct {
	OperationID uuid.UUID
	Items       []BulkItem
	Replayed    bool
}

// bulkTarget is one resolved ticket of a bulk update.
type bulkTarget struct {
	ticket    Ticket
	ifVersion *int64
	eventID   uuid.UUID
}

// BulkUpdateTickets applies one update to several of the tenant's tickets as
// one operation: every ticket changes, each with its own version and event
// (and outbox event when it changed), and the operation record commits with
// them in one transaction, or nothing is written. It is UpdateTicket's
// write (applyUpdate) run once per ticket inside one ledger transaction, so
// the rules are the same: an IfVersion that does not match rejects the whole
// bulk, a replay answers the recorded per-ticket versions and changes.
// Tickets are locked in ID order, so concurrent bulks over overlapping
// tickets take turns instead of deadlocking.
//
// Errors: those of UpdateTicket; ErrInvalid also for a bad ticket list.
func (s *Service) BulkUpdateTickets(ctx context.Context, c Caller, opID operations.ID, in BulkUpdate) (result BulkResult, err error) {
	defer func() { s.report(ActionBulkUpdateTickets, result.Replayed, err) }()
	if err := requireID(opID); err != nil {
		return BulkResult{}, err
	}
	tenant, actor, id := c.Tenant, c.Subject, opID.UUID()
	if in.Update.IfVersion != nil {
		return BulkResult{OperationID: id}, invalidField("if_version", "a bulk update pins versions per ticket in if_versions")
	}
	n, err := normalizeUpdate(in.Update)
	if err != nil {
		return BulkResult{OperationID: id}, err
	}
	if err := checkBulkRefs(in); err != nil {
		return BulkResult{OperationID: id}, err
	}
	if err := checkActor(actor); err != nil {
		return BulkResult{OperationID: id}, err
	}
	n.Assignee = resolveMe(n.Assignee, actor)
	if err := s.checkAssignee(ctx, c, operations.Key{Tenant: tenant, Action: ActionBulkUpdateTickets, OperationID: id}, n.Assignee); err != nil {
		return BulkResult{OperationID: id}, err
	}
	res, err := s.bulkWrite(ctx, c, id, in, n)
	if errors.Is(err, errApprovalNowNeeded) {
		// A ticket moved under the approval check: read them all again, so
		// the check sees what the write would now do and asks if it must.
		res, err = s.bulkWrite(ctx, c, id, in, n)
	}
	return res, err
}

// bulkWrite is one attempt at BulkUpdateTickets' write of the normalised
// update n: read the tickets, check approval on what they are now, write
// them in one ledger transaction (or answer the recorded replay).
func (s *Service) bulkWrite(ctx context.Context, c Caller, id uuid.UUID, in BulkUpdate, n TicketUpdate) (BulkResult, error) {
	tenant, actor := c.Tenant, c.Subject
	base := uuid.Must(uuid.NewV7())
	targets, err := s.resolveBulk(ctx, tenant, base, in)
	if err != nil {
		return BulkResult{OperationID: id}, err
	}
	// Lock order, fingerprint and the recorded result all follow ticket ID
	// order; the answer follows the caller's.
	locked := slices.Clone(targets)
	slices.SortFunc(locked, func(a, b *bulkTarget) int { return cmp.Compare(a.ticket.ID.String(), b.ticket.ID.String()) })
	cur := make([]Ticket, len(targets))
	for i, t := range targets {
		cur[i] = t.ticket
	}
	key := operations.Key{Tenant: tenant, Action: ActionBulkUpdateTickets, OperationID: id}
	fp := bulkFingerprint(locked, n)
	proposal := updateProposal(ActionBulkUpdateTickets, id.String(), cur, n, true)
	gate := s.gate(key, fp, actor, proposal)
	items := make(map[uuid.UUID]BulkItem, len(targets))
	out, err := s.ledger.RunGated(ctx, key, fp, base.String(), gate, func(tx *gorm.DB) error {
		changed := make([]Changes, 0, len(locked))
		for _, t := range locked {
			nt := n
			nt.IfVersion = t.ifVersion
			next, changes, err := applyUpdate(tx, tenant, actor, id, t.eventID, t.ticket.ID, nt)
			if err != nil {
				return fmt.Errorf("ticket %s: %w", t.ticket.Key, err)
			}
			items[t.ticket.ID] = BulkItem{Version: next.Version, Changes: changes, Ticket: next}
			changed = append(changed, changes)
			if len(changes) == 0 {
				continue
			}
			err = s.enqueue(tx, WriteEvent{ID: t.eventID, Tenant: tenant, Kind: EventUpdated, OperationID: id,
				At: next.UpdatedAt, Ticket: next, Changes: changes})
			if err != nil {
				return err
			}
		}
		return s.recheckApproval(proposal, changed)
	})
	if err != nil {
		return BulkResult{OperationID: id}, fmt.Errorf("bulk update tickets: %w", err)
	}
	res := BulkResult{OperationID: id, Replayed: out.Replayed}
	if out.Replayed {
		if items, err = s.recordedBulk(ctx, tenant, id, out.Record.ResultID); err != nil {
			return BulkResult{OperationID: id}, fmt.Errorf("bulk update tickets: %w", err)
		}
	}
	for _, t := range targets {
		item, ok := items[t.ticket.ID]
		if !ok {
			return BulkResult{OperationID: id}, fmt.Errorf("%w: bulk update tickets: no recorded event for ticket %s", ErrUnavailable, t.ticket.Key)
		}
		res.Items = append(res.Items, item)
	}
	return res, nil
}

// checkBulkRefs validates the ticket list before any ticket is read.
func checkBulkRefs(in BulkUpdate) error {
	switch {
	case len(in.Refs) == 0:
		return invalidField("ids", "name at least one ticket")
	case len(in.Refs) > MaxBulk:
		return invalidField("ids", "at most %d tickets per bulk update, got %d; split it into several operations", MaxBulk, len(in.Refs))
	}
	for ref, v := range in.IfVersions {
		if !slices.Contains(in.Refs, ref) {
			return invalidField("if_versions", "%q is not one of ids; key each version by the ticket reference as given in ids", ref)
		}
		if v < 1 {
			return invalidField("if_versions", "%s: must be a version number of at least 1, got %d", ref, v)
		}
	}
	return nil
}

// bulkEventID is the ID of the event a bulk update leaves on one ticket:
// derived from the operation's result ID (base) and the ticket, so a replay
// finds exactly its own events even if the same operation ID was also used
// for an update_ticket, which leaves events under the same operation ID.
func bulkEventID(base, ticketID uuid.UUID) uuid.UUID {
	return uuid.NewSHA1(base, ticketID[:])
}

// resolveBulk reads every named ticket, in the caller's order, refusing a
// ticket named twice (by key and by UUID, say).
func (s *Service) resolveBulk(ctx context.Context, tenant string, base uuid.UUID, in BulkUpdate) ([]*bulkTarget, error) {
	seen := make(map[uuid.UUID]string, len(in.Refs))
	out := make([]*bulkTarget, 0, len(in.Refs))
	for _, ref := range in.Refs {
		t, err := s.GetTicket(ctx, tenant, ref)
		if err != nil {
			return nil, fmt.Errorf("bulk update tickets: %s: %w", strings.TrimSpace(ref), err)
		}
		local, err := s.isLocal(ctx, tenant, t.ProjectID)
		switch {
		case err != nil:
			return nil, fmt.Errorf("bulk update tickets: %w", err)
		case !local:
			return nil, invalidField("ids", "%s mirrors %s: a bulk update is one local transaction and cannot carry edits to a tracker; use update_ticket", t.Key, t.ExternalID)
		}
		if first, dup := seen[t.ID]; dup {
			return nil, invalidField("ids", "%q and %q are the same ticket %s; name each ticket once", first, ref, t.Key)
		}
		seen[t.ID] = ref
		bt := &bulkTarget{ticket: t, eventID: bulkEventID(base, t.ID)}
		if v, ok := in.IfVersions[ref]; ok {
			bt.ifVersion = &v
		}
		out = append(out, bt)
	}
	return out, nil
}

// bulkFingerprint identifies a bulk intent: the set of tickets (in ID order,
// so the order they were named in does not matter) and the normalised
// update. Like update_ticket's, if_versions are preconditions, not intent.
func bulkFingerprint(locked []*bulkTarget, n TicketUpdate) string {
	ids := make([]string, len(locked))
	for i, t := range locked {
		ids[i] = t.ticket.ID.String()
	}
	canonical, err := json.Marshal(struct {
		TicketIDs []string `json:"ticket_ids"`
		Update    string   `json:"update"`
	}{ids, updateFingerprint(uuid.Nil, n)})
	if err != nil {
		panic(fmt.Sprintf("marshal fingerprint input: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// recordedBulk reads back what a committed bulk update did, from its events
// (those whose IDs derive from the recorded base): per ticket, the version
// it produced and its changes, with the ticket as it is now.
func (s *Service) recordedBulk(ctx context.Context, tenant string, opID uuid.UUID, resultID string) (map[uuid.UUID]BulkItem, error) {
	base, err := uuid.Parse(resultID)
	if err != nil {
		return nil, fmt.Errorf("bulk operation %s: bad result ID %q: %w", opID, resultID, err)
	}
	var rows []eventRow
	if err := s.db.WithContext(ctx).Where("tenant_id = ? AND operation_id = ? AND kind = ?", tenant, opID.String(), string(EventUpdated)).
		Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("%w: read recorded events: %v", ErrUnavailable, err)
	}
	out := make(map[uuid.UUID]BulkItem, len(rows))
	for _, r := range rows {
		ev, err := r.toEvent()
		if err != nil {
			return nil, err
		}
		if ev.ID != bulkEventID(base, ev.TicketID) {
			continue
		}
		now, err := s.ticketByID(ctx, tenant, ev.TicketID.String())
		if err != nil {
			return nil, fmt.Errorf("read ticket: %w", err)
		}
		out[ev.TicketID] = BulkItem{Version: ev.Version, Changes: ev.Changes, Ticket: now}
	}
	return out, nil
}
