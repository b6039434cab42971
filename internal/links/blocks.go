package links

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/fault"
)

// maxCycleSearch bounds the tickets a blocks-cycle check visits; a tenant's
// blocks graph larger than that is refused a new blocks link rather than
// searched without end.
const maxCycleSearch = 10000

// lockBlocks serialises the tenant's blocks links until the transaction
// ends (a PostgreSQL advisory lock keyed by the tenant).
func lockBlocks(tx *gorm.DB, tenant string) error {
	if err := db.LockUntilCommit(tx, "ticket_links:blocks:"+tenant); err != nil {
		return fmt.Errorf("%w: lock blocks links: %v", fault.ErrUnavailable, err)
	}
	return nil
}

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
			tenant, string(Blocks), frontier).Scan(&edges).Error; err != nil {
			return fmt.Errorf("%w: read blocks links: %v", fault.ErrUnavailable, err)
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
			return fault.Invalid("link", "the tenant's blocks links reach more than %d tickets; a cycle cannot be ruled out", maxCycleSearch)
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
		return fmt.Errorf("%w: read cycle keys: %v", fault.ErrUnavailable, err)
	}
	keys := make(map[string]string, len(rows))
	for _, r := range rows {
		keys[r.ID] = r.Key
	}
	steps := make([]string, len(cycle)-1)
	for i := range steps {
		steps[i] = keys[cycle[i]] + " blocks " + keys[cycle[i+1]]
	}
	return fault.Invalid("link", "would make a blocks cycle: %s; remove one of these links first", strings.Join(steps, ", "))
}
