// Package links keeps the links between tickets (docs/contract.md#links):
// the ticket_links table, the kinds and the one row a link is stored as for
// both its ends, its rules (at most MaxPerTicket links on a ticket, no
// blocks cycle) and its reads. The ticket service calls Write inside
// link_tickets' ledger transaction, which holds both tickets' row locks, so
// a link changes with the operation's record, events and webhook.
package links

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/fault"
)

// MaxPerTicket bounds the links one ticket holds, so that get_ticket's list
// of them stays bounded.
const MaxPerTicket = 100

// Kind is how a ticket relates to another, read from the ticket's end.
type Kind string

// The link kinds; each end of a link reads the other's inverse.
const (
	Blocks       Kind = "blocks"
	BlockedBy    Kind = "blocked_by"
	RelatesTo    Kind = "relates_to"
	Duplicates   Kind = "duplicates"
	DuplicatedBy Kind = "duplicated_by"
)

// Kinds lists every link kind, in the order the contract documents them.
var Kinds = []Kind{Blocks, BlockedBy, RelatesTo, Duplicates, DuplicatedBy}

var inverses = map[Kind]Kind{
	Blocks: BlockedBy, BlockedBy: Blocks, RelatesTo: RelatesTo,
	Duplicates: DuplicatedBy, DuplicatedBy: Duplicates,
}

// Inverse is the kind the other end of a link reads.
func (k Kind) Inverse() Kind { return inverses[k] }

// ParseKind is the kind s names, in any case and with spaces around.
//
// Errors: fault.ErrInvalid.
func ParseKind(s string) (Kind, error) {
	kind := Kind(strings.ToLower(strings.TrimSpace(s)))
	if _, ok := inverses[kind]; !ok {
		return "", fault.Invalid("link", "must be one of blocks, blocked_by, relates_to, duplicates, duplicated_by; got %q", s)
	}
	return kind, nil
}

// Link is one of a ticket's links: how it relates to the other ticket.
type Link struct {
	Kind     Kind
	TicketID uuid.UUID
	Key      string
}

// Change is one link to add or, with Remove, take away: ticket From is Kind
// of ticket To, both the tenant's.
type Change struct {
	Tenant      string
	Kind        Kind
	From, To    uuid.UUID
	OperationID uuid.UUID
	At          time.Time
	Remove      bool
}

type row struct {
	TenantID    string    `gorm:"column:tenant_id;primaryKey"`
	SourceID    string    `gorm:"column:source_id;primaryKey"`
	TargetID    string    `gorm:"column:target_id;primaryKey"`
	Kind        string    `gorm:"column:kind;primaryKey"`
	OperationID string    `gorm:"column:operation_id"`
	CreatedAt   time.Time `gorm:"column:created_at"`
}

func (row) TableName() string { return "ticket_links" }

// stored is the one row a link is kept as: blocked_by and duplicated_by
// turned round, relates_to from the smaller ID, so either end's call finds
// the same row.
func stored(kind Kind, from, to uuid.UUID) (Kind, uuid.UUID, uuid.UUID) {
	switch kind {
	case BlockedBy, DuplicatedBy:
		return kind.Inverse(), to, from
	case RelatesTo:
		if strings.Compare(to.String(), from.String()) < 0 {
			return kind, to, from
		}
	}
	return kind, from, to
}

// Write makes the change inside the caller's transaction, which holds both
// tickets' row locks, and reports whether it changed anything: adding a link
// that is there, or removing one that is not, changes nothing.
//
// Errors: fault.ErrInvalid (too many links, a blocks cycle),
// fault.ErrUnavailable.
func Write(tx *gorm.DB, c Change) (bool, error) {
	kind, source, target := stored(c.Kind, c.From, c.To)
	r := row{TenantID: c.Tenant, SourceID: source.String(), TargetID: target.String(), Kind: string(kind),
		OperationID: c.OperationID.String(), CreatedAt: c.At}
	var changed int64
	var err error
	if c.Remove {
		changed, err = remove(tx, r)
	} else {
		changed, err = insert(tx, r, kind == Blocks)
	}
	return changed > 0, err
}

func remove(tx *gorm.DB, r row) (int64, error) {
	res := tx.Exec(`DELETE FROM ticket_links WHERE tenant_id = ? AND source_id = ? AND target_id = ? AND kind = ?`,
		r.TenantID, r.SourceID, r.TargetID, r.Kind)
	if res.Error != nil {
		return 0, fmt.Errorf("%w: delete link: %v", fault.ErrUnavailable, res.Error)
	}
	return res.RowsAffected, nil
}

// insert adds the link unless it is there, after the checks: each end
// below MaxPerTicket and, for blocks, no cycle. A blocks link first takes
// the tenant's blocks lock (PostgreSQL; SQLite has one writer), so that two
// links that would close a cycle together cannot both pass the check.
func insert(tx *gorm.DB, r row, blocks bool) (int64, error) {
	var exists int64
	if err := tx.Model(&row{}).Where(&row{TenantID: r.TenantID, SourceID: r.SourceID, TargetID: r.TargetID, Kind: r.Kind}).
		Count(&exists).Error; err != nil {
		return 0, fmt.Errorf("%w: read link: %v", fault.ErrUnavailable, err)
	}
	if exists > 0 {
		return 0, nil
	}
	for _, end := range []string{r.SourceID, r.TargetID} {
		if err := checkCount(tx, r.TenantID, end); err != nil {
			return 0, err
		}
	}
	if blocks {
		if err := lockBlocks(tx, r.TenantID); err != nil {
			return 0, err
		}
		if err := checkBlocksCycle(tx, r.TenantID, r.SourceID, r.TargetID); err != nil {
			return 0, err
		}
	}
	res := tx.Exec(`INSERT INTO ticket_links (tenant_id, source_id, target_id, kind, operation_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		r.TenantID, r.SourceID, r.TargetID, r.Kind, r.OperationID, r.CreatedAt)
	if res.Error != nil {
		return 0, fmt.Errorf("%w: insert link: %v", fault.ErrUnavailable, res.Error)
	}
	return res.RowsAffected, nil
}

func checkCount(tx *gorm.DB, tenant, ticketID string) error {
	var n int64
	if err := tx.Model(&row{}).Where("tenant_id = ? AND (source_id = ? OR target_id = ?)", tenant, ticketID, ticketID).
		Count(&n).Error; err != nil {
		return fmt.Errorf("%w: count links: %v", fault.ErrUnavailable, err)
	}
	if n >= MaxPerTicket {
		return fault.Invalid("link", "a ticket holds at most %d links; remove one first", MaxPerTicket)
	}
	return nil
}

// linkEnd is one link as read from one ticket's end.
type linkEnd struct {
	Kind      string    `gorm:"column:kind"`
	Inverse   bool      `gorm:"column:inverse"`
	ID        string    `gorm:"column:id"`
	Key       string    `gorm:"column:key"`
	CreatedAt time.Time `gorm:"column:created_at"`
}

// ticketLinksSQL reads a ticket's links from both ends, the other ticket's
// ID and key with each, oldest first.
const ticketLinksSQL = `SELECT l.kind AS kind, false AS inverse, t.id AS id, t.key AS key, l.created_at AS created_at FROM ticket_links l
	JOIN tickets t ON t.tenant_id = l.tenant_id AND t.id = l.target_id
	WHERE l.tenant_id = @tenant AND l.source_id = @ticket
UNION ALL
SELECT l.kind AS kind, true AS inverse, t.id AS id, t.key AS key, l.created_at AS created_at FROM ticket_links l
	JOIN tickets t ON t.tenant_id = l.tenant_id AND t.id = l.source_id
	WHERE l.tenant_id = @tenant AND l.target_id = @ticket
ORDER BY created_at, key`

// Of returns the links of the tenant's ticket, each with the kind read from
// this ticket's end (the inverse of the other's), oldest first; at most
// MaxPerTicket.
//
// Errors: fault.ErrUnavailable.
func Of(db *gorm.DB, tenant string, ticketID uuid.UUID) ([]Link, error) {
	var ends []linkEnd
	if err := db.Raw(ticketLinksSQL, map[string]any{"tenant": tenant, "ticket": ticketID.String()}).
		Scan(&ends).Error; err != nil {
		return nil, fmt.Errorf("%w: read links: %v", fault.ErrUnavailable, err)
	}
	out := make([]Link, 0, len(ends))
	for _, e := range ends {
		id, err := uuid.Parse(e.ID)
		if err != nil {
			return nil, fmt.Errorf("link of %s: bad ticket id %q: %w", ticketID, e.ID, err)
		}
		kind := Kind(e.Kind)
		if e.Inverse {
			kind = kind.Inverse()
		}
		out = append(out, Link{Kind: kind, TicketID: id, Key: e.Key})
	}
	return out, nil
}
