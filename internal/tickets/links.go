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

	"github.com/ticketd/ticketd/internal/operations"
)

// ActionLinkTickets is the ledger action of LinkTickets.
const ActionLinkTickets = "link_tickets"

// The history kinds of a link change, one on each end.
const (
	EventLinked   EventKind = "linked"
	EventUnlinked EventKind = "unlinked"
)

// MaxLinks bounds the links one ticket holds, so that get_ticket's list of
// them stays bounded.
const MaxLinks = 100

// LinkKind is how a ticket relates to another, read from the ticket's end.
type LinkKind string

// The link kinds; each end of a link reads the other's inverse.
const (
	LinkBlocks       LinkKind = "blocks"
	LinkBlockedBy    LinkKind = "blocked_by"
	LinkRelatesTo    LinkKind = "relates_to"
	LinkDuplicates   LinkKind = "duplicates"
	LinkDuplicatedBy LinkKind = "duplicated_by"
)

// LinkKinds lists every link kind, in the order the contract documents them.
var LinkKinds = []LinkKind{LinkBlocks, LinkBlockedBy, LinkRelatesTo, LinkDuplicates, LinkDuplicatedBy}

var inverseLinks = map[LinkKind]LinkKind{
	LinkBlocks: LinkBlockedBy, LinkBlockedBy: LinkBlocks, LinkRelatesTo: LinkRelatesTo,
	LinkDuplicates: LinkDuplicatedBy, LinkDuplicatedBy: LinkDuplicates,
}

// Inverse is the kind the other end of a link reads.
func (k LinkKind) Inverse() LinkKind { return inverseLinks[k] }

// Link is one of a ticket's links: how it relates to the other ticket.
type Link struct {
	Kind     LinkKind
	TicketID uuid.UUID
	Key      string
}

// LinkChange is the caller's intent for link_tickets: ticket Ticket is
// Kind of Target (both a UUID or a key), or no longer is when Remove.
type LinkChange struct {
	Ticket string
	Kind   LinkKind
	Target string
	Remove bool
}

// LinkResult is the outcome of LinkTickets.
type LinkResult struct {
	OperationID uuid.UUID
	// Ticket is the ticket the call named and Links its links as they are now.
	Ticket Ticket
	Links  []Link
	// Changed says the operation added or removed the link; false when it
	// was already as asked.
	Changed  bool
	Replayed bool
}

// storedLink is the one row a link is kept as: blocked_by and duplicated_by
// turned round, relates_to from the smaller ID, so either end's call finds
// the same row.
func storedLink(kind LinkKind, from, to uuid.UUID) (LinkKind, uuid.UUID, uuid.UUID) {
	switch kind {
	case LinkBlockedBy, LinkDuplicatedBy:
		return kind.Inverse(), to, from
	case LinkRelatesTo:
		if strings.Compare(to.String(), from.String()) < 0 {
			return kind, to, from
		}
	}
	return kind, from, to
}

// linkFingerprint identifies a link_tickets intent: both resolved tickets,
// the kind and whether it is a removal.
func linkFingerprint(from, to uuid.UUID, kind LinkKind, remove bool) string {
	canonical, err := json.Marshal(struct {
		TicketID string   `json:"ticket_id"`
		Link     LinkKind `json:"link"`
		TargetID string   `json:"target_id"`
		Remove   bool     `json:"remove"`
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
	kind := LinkKind(strings.ToLower(strings.TrimSpace(string(in.Kind))))
	if _, ok := inverseLinks[kind]; !ok {
		return LinkResult{OperationID: id}, invalidField("link", "must be one of blocks, blocked_by, relates_to, duplicates, duplicated_by; got %q", in.Kind)
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
	kind          LinkKind
	from, to      Ticket
	remove        bool
}

type linkRow struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	SourceID    string    `gorm:"column:source_id;primaryKey"`
	TargetID    string    `gorm:"column:target_id;primaryKey"`
	Kind        string    `gorm:"column:kind;primaryKey"`
	OperationID string    `gorm:"column:operation_id"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (linkRow) TableName() string { return "ticket_links" }

// writeLink locks both tickets (in ID order, so two links of one pair never
// deadlock), checks the change, writes it and, when it changed something,
// one event on each end and the outbox's event. It reports whether the
// link changed.
func (s *Service) writeLink(tx *gorm.DB, w linkWrite) (bool, error) {
	rows, err := lockTickets(tx, w.tenant, w.from.ID, w.to.ID)
	if err != nil {
		return false, err
	}
	stored, source, target := storedLink(w.kind, w.from.ID, w.to.ID)
	row := linkRow{TenantID: w.tenant, SourceID: source.String(), TargetID: target.String(), Kind: string(stored),
		OperationID: w.opID.String(), CreatedAt: time.Now().UTC().Truncate(time.Microsecond)}
	var changed int64
	if w.remove {
		changed, err = deleteLink(tx, row)
	} else {
		changed, err = s.insertLink(tx, row, stored == LinkBlocks)
	}
	if err != nil || changed == 0 {
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
		if err := appendEvent(tx, end.row, end.eventID, w.opID, w.actor, kind, changes, row.CreatedAt); err != nil {
			return false, err
		}
	}
	return true, s.enqueue(tx, WriteEvent{ID: w.eventID, Tenant: w.tenant, Kind: kind, OperationID: w.opID, At: row.CreatedAt,
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

func deleteLink(tx *gorm.DB, row linkRow) (int64, error) {
	res := tx.Exec(`DELETE FROM ticket_links WHERE tenant_id = ? AND source_id = ? AND target_id = ? AND kind = ?`,
		row.TenantID, row.SourceID, row.TargetID, row.Kind)
	if res.Error != nil {
		return 0, fmt.Errorf("%w: delete link: %v", ErrUnavailable, res.Error)
	}
	return res.RowsAffected, nil
}

// insertLink adds the link unless it is there, after the checks: each end
// below MaxLinks and, for blocks, no cycle. A blocks link first takes the
// tenant's blocks lock (PostgreSQL; SQLite has one writer), so that two
// links that would close a cycle together cannot both pass the check.
func (s *Service) insertLink(tx *gorm.DB, row linkRow, blocks bool) (int64, error) {
	var exists int64
	if err := tx.Model(&linkRow{}).Where(&linkRow{TenantID: row.TenantID, SourceID: row.SourceID, TargetID: row.TargetID, Kind: row.Kind}).
		Count(&exists).Error; err != nil {
		return 0, fmt.Errorf("%w: read link: %v", ErrUnavailable, err)
	}
	if exists > 0 {
		return 0, nil
	}
	for _, end := range []string{row.SourceID, row.TargetID} {
		if err := checkLinkCount(tx, row.TenantID, end); err != nil {
			return 0, err
		}
	}
	if blocks {
		if err := lockBlocks(tx, row.TenantID); err != nil {
			return 0, err
		}
		if err := checkBlocksCycle(tx, row.TenantID, row.SourceID, row.TargetID); err != nil {
			return 0, err
		}
	}
	res := tx.Exec(`INSERT INTO ticket_links (tenant_id, source_id, target_id, kind, operation_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		row.TenantID, row.SourceID, row.TargetID, row.Kind, row.OperationID, row.CreatedAt)
	if res.Error != nil {
		return 0, fmt.Errorf("%w: insert link: %v", ErrUnavailable, res.Error)
	}
	return res.RowsAffected, nil
}

func checkLinkCount(tx *gorm.DB, tenant, ticketID string) error {
	var n int64
	if err := tx.Model(&linkRow{}).Where("tenant_id = ? AND (source_id = ? OR target_id = ?)", tenant, ticketID, ticketID).
		Count(&n).Error; err != nil {
		return fmt.Errorf("%w: count links: %v", ErrUnavailable, err)
	}
	if n >= MaxLinks {
		return invalidField("link", "a ticket holds at most %d links; remove one first", MaxLinks)
	}
	return nil
}

// lockBlocks serialises the tenant's blocks links until the transaction
// ends (a PostgreSQL advisory lock keyed by the tenant).
func lockBlocks(tx *gorm.DB, tenant string) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	if err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "ticket_links:blocks:"+tenant).Error; err != nil {
		return fmt.Errorf("%w: lock blocks links: %v", ErrUnavailable, err)
	}
	return nil
}
