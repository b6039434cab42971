package tickets

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/subtasks"
)

// maxParentRef bounds a parent reference: a UUID (36) or a key.
const maxParentRef = 64

// resolveNewParent resolves a new ticket's parent reference to its UUID in
// place, before the ledger, so that a key and the UUID are one input. It
// returns the parent's key ("" without a parent). It checks nothing else:
// a retry of a create whose parent has since moved must still replay, and
// the create checks the tree where it sets the parent.
//
// Errors: ErrInvalid (not a reference), ErrNotFound, ErrUnavailable.
func (s *Service) resolveNewParent(ctx context.Context, tenant string, n *NewTicket) (string, error) {
	if n.Parent == "" {
		return "", nil
	}
	t, err := s.parentTicket(ctx, tenant, n.Parent)
	if err != nil {
		return "", err
	}
	n.Parent, n.parentKey = t.ID.String(), t.Key
	return t.Key, nil
}

// checkNewParent refuses a resolved parent as setting it on a new ticket
// would (subtasks.Check): the preview of a create that would create.
//
// Errors: ErrInvalid, ErrUnavailable.
func (s *Service) checkNewParent(ctx context.Context, tenant string, n NewTicket) error {
	if n.Parent == "" {
		return nil
	}
	newTicket := subtasks.Ref{ID: uuid.Nil.String(), Key: "the new ticket"}
	_, err := subtasks.Check(s.db.WithContext(ctx), tenant, newTicket, n.Parent)
	return err
}

// parentID returns the UUID of the tenant's ticket ref names, as a parent.
//
// Errors: ErrInvalid (not a reference), ErrNotFound, ErrUnavailable.
func (s *Service) parentID(ctx context.Context, tenant, ref string) (string, error) {
	t, err := s.parentTicket(ctx, tenant, ref)
	return t.ID.String(), err
}

// parentTicket reads the tenant's ticket ref names, as a parent.
//
// Errors: ErrInvalid (not a reference), ErrNotFound, ErrUnavailable.
func (s *Service) parentTicket(ctx context.Context, tenant, ref string) (Ticket, error) {
	t, err := s.GetTicket(ctx, tenant, ref)
	var invalid *ValidationError
	if errors.As(err, &invalid) {
		return Ticket{}, invalidField("parent", "must be a ticket UUID or a key like SUP-42, got %q", ref)
	}
	if err != nil {
		return Ticket{}, fmt.Errorf("parent %s: %w", ref, err)
	}
	return t, nil
}

// resolveParent is an update's parent resolved: nil stays, "" detaches.
func (s *Service) resolveParent(ctx context.Context, tenant string, ref *string) (*string, error) {
	if ref == nil || *ref == "" {
		return ref, nil
	}
	id, err := s.parentID(ctx, tenant, *ref)
	return &id, err
}

// reparent moves cur under parentID ("" detaches), inside the update's
// transaction, and records the move in changes as parent keys (nil: none).
func reparent(tx *gorm.DB, tenant string, cur Ticket, parentID string, changes Changes) error {
	from, to, moved, err := subtasks.Move(tx, tenant, subtasks.Ref{ID: cur.ID.String(), Key: cur.Key}, parentID)
	if moved {
		changes["parent"] = Change{From: subtasks.KeyOf(from), To: subtasks.KeyOf(to)}
	}
	return err
}

// Family returns the tenant's ticket's parent (nil when it has none) and
// children, as get_ticket shows them.
//
// Errors: ErrUnavailable.
func (s *Service) Family(ctx context.Context, tenant string, ticketID uuid.UUID) (*subtasks.Ref, subtasks.Children, error) {
	return subtasks.Family(s.db.WithContext(ctx), tenant, ticketID.String())
}
