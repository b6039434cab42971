package tickets

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"
)

// maxCycleSearch bounds the tickets a blocks-cycle check visits; a tenant's
// blocks graph larger than that is refused a new blocks link rather than
// searched without end.
const maxCycleSearch = 10000

// checkBlocksCycle refuses source blocks target when target already blocks
// source through blocks links, naming the cycle. It walks the graph
// breadth-first from target, one query per level.
func checkBlocksCycle(tx *gorm.DB, tenant, source, target string) error {
	parent := map[string]string{target: ""}
	frontier := []string{target}
	for len(frontier) > 0 {
		var edges []struct {
			SourceID string `gorm:"column:source_id"`
			TargetID string `gorm:"column:target_id"`
		}
		if err := tx.Raw(`SELECT source_id, target_id FROM ticket_links WHERE tenant_id = ? AND kind = ? AND source_id IN ?`,
			tenant, string(LinkBlocks), frontier).Scan(&edges).Error; err != nil {
			return fmt.Errorf("%w: read blocks links: %v", ErrUnavailable, err)
		}
		frontier = frontier[:0:0]
		for _, e := range edges {
			if _, seen := parent[e.TargetID]; seen {
				continue
			}
			parent[e.TargetID] = e.SourceID
			if e.TargetID == source {
				return cycleError(tx, tenant, source, parent)
			}
			frontier = append(frontier, e.TargetID)
		}
		if len(parent) > maxCycleSearch {
			return invalidField("link", "the tenant's blocks links reach more than %d tickets; a cycle cannot be ruled out", maxCycleSearch)
		}
	}
	return nil
}

// cycleError names the cycle source blocks target would close: the new
// link, then the path back from target to source.
func cycleError(tx *gorm.DB, tenant, source string, parent map[string]string) error {
	path := []string{source}
	for at := parent[source]; at != ""; at = parent[at] {
		path = append(path, at)
	}
	// path runs source ← … ← target; the cycle reads source, target, …, source.
	cycle := []string{source}
	for i := len(path) - 1; i >= 0; i-- {
		cycle = append(cycle, path[i])
	}
	var rows []struct {
		ID  string `gorm:"column:id"`
		Key string `gorm:"column:key"`
	}
	if err := tx.Raw(`SELECT id, key FROM tickets WHERE tenant_id = ? AND id IN ?`, tenant, cycle).Scan(&rows).Error; err != nil {
		return fmt.Errorf("%w: read cycle keys: %v", ErrUnavailable, err)
	}
	keys := make(map[string]string, len(rows))
	for _, r := range rows {
		keys[r.ID] = r.Key
	}
	steps := make([]string, len(cycle)-1)
	for i := range steps {
		steps[i] = keys[cycle[i]] + " blocks " + keys[cycle[i+1]]
	}
	return invalidField("link", "would make a blocks cycle: %s; remove one of these links first", strings.Join(steps, ", "))
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

// TicketLinks returns the links of the tenant's ticket, each with the kind
// read from this ticket's end (the inverse of the other's), oldest first;
// at most MaxLinks.
//
// Errors: ErrUnavailable.
func (s *Service) TicketLinks(ctx context.Context, tenant string, ticketID uuid.UUID) ([]Link, error) {
	var ends []linkEnd
	if err := s.db.WithContext(ctx).Raw(ticketLinksSQL, map[string]any{"tenant": tenant, "ticket": ticketID.String()}).
		Scan(&ends).Error; err != nil {
		return nil, fmt.Errorf("%w: read links: %v", ErrUnavailable, err)
	}
	out := make([]Link, 0, len(ends))
	for _, e := range ends {
		id, err := uuid.Parse(e.ID)
		if err != nil {
			return nil, fmt.Errorf("link of %s: bad ticket id %q: %w", ticketID, e.ID, err)
		}
		kind := LinkKind(e.Kind)
		if e.Inverse {
			kind = kind.Inverse()
		}
		out = append(out, Link{Kind: kind, TicketID: id, Key: e.Key})
	}
	return out, nil
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
