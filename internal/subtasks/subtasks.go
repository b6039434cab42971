// Package subtasks keeps the tickets' parent tree (docs/contract.md#sub-tasks):
// the parent_id column of the tickets table, its rules (same tenant, no
// cycle, at most MaxDepth parents above any ticket) and its reads (a
// ticket's parent and children). The ticket service calls it inside its
// writes' transactions, so a parent changes with the write's ledger record,
// event and webhook.
package subtasks

import (
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/fault"
)

// MaxDepth is the longest chain of parents above a ticket: a ticket with
// MaxDepth parents above it cannot get children.
const MaxDepth = 3

// MaxChildrenShown bounds the children keys a ticket shows.
const MaxChildrenShown = 20

// Ref names a ticket.
type Ref struct {
	ID  string
	Key string
}

// Children is a ticket's children: how many, and the first keys (oldest
// first, at most MaxChildrenShown).
type Children struct {
	Count int64
	Keys  []string
}

// ParentOf returns the ticket's parent, nil when it has none.
//
// Errors: fault.ErrUnavailable.
func ParentOf(db *gorm.DB, tenant, id string) (*Ref, error) {
	var refs []Ref
	err := db.Raw(`SELECT p.id AS id, p.key AS key FROM tickets t JOIN tickets p ON p.tenant_id = t.tenant_id AND p.id = t.parent_id
		WHERE t.tenant_id = ? AND t.id = ?`, tenant, id).Scan(&refs).Error
	if err != nil {
		return nil, fmt.Errorf("%w: read parent: %v", fault.ErrUnavailable, err)
	}
	if len(refs) == 0 {
		return nil, nil
	}
	return &refs[0], nil
}

// ChildrenOf returns the ticket's children.
//
// Errors: fault.ErrUnavailable.
func ChildrenOf(db *gorm.DB, tenant, id string) (Children, error) {
	c := Children{Keys: []string{}}
	if err := db.Raw(`SELECT COUNT(*) FROM tickets WHERE tenant_id = ? AND parent_id = ?`, tenant, id).
		Scan(&c.Count).Error; err != nil {
		return Children{}, fmt.Errorf("%w: count children: %v", fault.ErrUnavailable, err)
	}
	if c.Count == 0 {
		return c, nil
	}
	if err := db.Raw(`SELECT key FROM tickets WHERE tenant_id = ? AND parent_id = ? ORDER BY created_at, id LIMIT ?`,
		tenant, id, MaxChildrenShown).Scan(&c.Keys).Error; err != nil {
		return Children{}, fmt.Errorf("%w: list children: %v", fault.ErrUnavailable, err)
	}
	return c, nil
}

// Set makes parentID ("": none) the parent of child, inside the caller's
// transaction, which holds child's row lock, and returns the parent (nil:
// none), after Check's checks.
//
// Errors: those of Check.
func Set(tx *gorm.DB, tenant string, child Ref, parentID string) (*Ref, error) {
	var parent *Ref
	if parentID != "" {
		var err error
		if parent, err = Check(tx, tenant, child, parentID); err != nil {
			return nil, err
		}
	}
	var id any
	if parent != nil {
		id = parent.ID
	}
	if err := tx.Exec(`UPDATE tickets SET parent_id = ? WHERE tenant_id = ? AND id = ?`, id, tenant, child.ID).Error; err != nil {
		return nil, fmt.Errorf("%w: set parent: %v", fault.ErrUnavailable, err)
	}
	return parent, nil
}

// Check returns the parent parentID names, after taking the tenant's tree
// lock until tx ends. It refuses a parent that is not the tenant's ticket,
// that is child itself or below it (a cycle, named) and one that would put
// a ticket of child's subtree more than MaxDepth parents deep. child need
// not be stored yet (a tracker-backed create checks before it sends, and
// stores the ticket once the tracker answered): then it has no subtree.
//
// Errors: fault.ErrInvalid, fault.ErrNotFound, fault.ErrUnavailable.
func Check(tx *gorm.DB, tenant string, child Ref, parentID string) (*Ref, error) {
	if err := lockTree(tx, tenant); err != nil {
		return nil, err
	}
	var refs []Ref
	if err := tx.Raw(`SELECT id, key FROM tickets WHERE tenant_id = ? AND id = ?`, tenant, parentID).Scan(&refs).Error; err != nil {
		return nil, fmt.Errorf("%w: read parent: %v", fault.ErrUnavailable, err)
	}
	if len(refs) == 0 {
		return nil, fmt.Errorf("parent: %w", fault.ErrNotFound)
	}
	if err := check(tx, tenant, child, refs[0]); err != nil {
		return nil, err
	}
	return &refs[0], nil
}

// lockTree serialises the tenant's parent changes until the transaction
// ends (a PostgreSQL advisory lock keyed by the tenant; SQLite has one
// writer). The checks read rows other than the locked child: without it two
// moves, each valid alone (a under b, b under a), both commit, and so do two
// that each stay within MaxDepth but together pass it.
func lockTree(tx *gorm.DB, tenant string) error {
	if err := db.LockUntilCommit(tx, "tickets:parents:"+tenant); err != nil {
		return fmt.Errorf("%w: lock the parent tree: %v", fault.ErrUnavailable, err)
	}
	return nil
}

// check walks up from parent (its chain is at most MaxDepth long) looking
// for child, then measures child's subtree against the depth left.
func check(tx *gorm.DB, tenant string, child, parent Ref) error {
	chain := []string{child.Key, parent.Key}
	above, at := 0, parent
	for at.ID != child.ID {
		up, err := ParentOf(tx, tenant, at.ID)
		if err != nil {
			return err
		}
		if up == nil || above > MaxDepth {
			return checkHeight(tx, tenant, child, parent, above)
		}
		above++
		at = *up
		chain = append(chain, up.Key)
	}
	return fault.Invalid("parent", "%s would be its own ancestor (cycle %s)", child.Key, strings.Join(chain, " → "))
}

// checkHeight refuses a parent with above parents over it when child's
// subtree would then reach deeper than MaxDepth.
func checkHeight(tx *gorm.DB, tenant string, child, parent Ref, above int) error {
	below, err := height(tx, tenant, child.ID)
	if err != nil {
		return err
	}
	if above+1+below > MaxDepth {
		return fault.Invalid("parent", "%s has %d parent(s) above it and %s %d level(s) of sub-tasks below it; a ticket can have at most %d parents above it",
			parent.Key, above, child.Key, below, MaxDepth)
	}
	return nil
}

// height is how many levels of children lie below id, counted up to
// MaxDepth (deeper cannot be stored).
func height(tx *gorm.DB, tenant, id string) (int, error) {
	level := []string{id}
	for h := 0; h <= MaxDepth; h++ {
		var next []string
		if err := tx.Raw(`SELECT id FROM tickets WHERE tenant_id = ? AND parent_id IN ?`, tenant, level).
			Scan(&next).Error; err != nil {
			return 0, fmt.Errorf("%w: read sub-tasks: %v", fault.ErrUnavailable, err)
		}
		if len(next) == 0 {
			return h, nil
		}
		level = next
	}
	return MaxDepth + 1, nil
}

// Move is Set for an update: it reads child's parent first and changes
// nothing when parentID already is it. It returns the parent before and
// after (nil: none) and whether it moved.
//
// Errors: those of Set.
func Move(tx *gorm.DB, tenant string, child Ref, parentID string) (from, to *Ref, moved bool, err error) {
	from, err = ParentOf(tx, tenant, child.ID)
	if err != nil || (from == nil && parentID == "") || (from != nil && from.ID == parentID) {
		return from, from, false, err
	}
	to, err = Set(tx, tenant, child, parentID)
	return from, to, err == nil, err
}

// Family returns the ticket's parent (nil: none) and its children.
//
// Errors: fault.ErrUnavailable.
func Family(db *gorm.DB, tenant, id string) (*Ref, Children, error) {
	parent, err := ParentOf(db, tenant, id)
	if err != nil {
		return nil, Children{}, err
	}
	children, err := ChildrenOf(db, tenant, id)
	return parent, children, err
}

// KeyOf is r's key, nil for none: how a change shows a parent.
func KeyOf(r *Ref) any {
	if r == nil {
		return nil
	}
	return r.Key
}
