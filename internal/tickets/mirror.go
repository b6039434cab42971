package tickets

import (
	"context"
	"fmt"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/subtasks"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Mirror is what a tracker backend (internal/tracked) writes through: the
// Service's ledger, its approval gate, and the local rows that mirror what
// the tracker proved, written inside the transaction that settles the
// operation, as a local write writes them.
type Mirror struct{ s *Service }

// DB is the primary database handle.
func (m Mirror) DB() *gorm.DB { return m.s.db }

// Ledger is the Service's operation ledger.
func (m Mirror) Ledger() *operations.Ledger { return m.s.ledger }

// People is the tenant directory, where a tracker-backed edit reads an
// assignee's email to find their account in the tracker.
func (m Mirror) People() *people.Directory { return m.s.people }

// Local is the local store's Backend: an update that changes nothing the
// tracker holds is a local write.
func (m Mirror) Local() Backend { return local(m) }

// TrackerBackend returns projectID's tracker backend; nil for a local
// project and for one that does not exist.
func (m Mirror) TrackerBackend(ctx context.Context, tenant, projectID string) (*tracker.Backend, error) {
	p, err := m.s.projectBackends(ctx, tenant, projectID)
	return p.stored, err
}

// CreateGate is the approval step of creating n (nil without an approval gate).
func (m Mirror) CreateGate(key operations.Key, fp, actor string, n NewTicket) operations.GateFunc {
	return m.s.gate(key, fp, actor, createProposal(key.OperationID.String(), n))
}

// UpdateGate is the approval step of updating t by n (nil without an approval gate).
// A tracker's ticket may move between this check and the tracker's write,
// with no lock of ours to recheck under, so an update to urgent asks even
// when t is urgent already.
func (m Mirror) UpdateGate(key operations.Key, fp, actor string, t Ticket, n TicketUpdate) operations.GateFunc {
	p := updateProposal(ActionUpdateTicket, key.OperationID.String(), []Ticket{t}, n, false)
	p.Urgent = p.Urgent || (n.Priority != nil && *n.Priority == PriorityUrgent)
	return m.s.gate(key, fp, actor, p)
}

// UpdateFingerprint identifies the intent of updating ticketID by n.
func (Mirror) UpdateFingerprint(ticketID uuid.UUID, n TicketUpdate) string {
	return updateFingerprint(ticketID, n)
}

// CommentFingerprint identifies the intent of commenting body on ticketID.
func (Mirror) CommentFingerprint(ticketID uuid.UUID, body string) string {
	return commentFingerprint(ticketID, body)
}

// Apply returns cur as n would leave it, or the error the local write
// would refuse n with.
func (Mirror) Apply(n TicketUpdate, cur Ticket) (Ticket, error) {
	next, _, err := n.applyTo(cur)
	return next, err
}

// LockTicket reads the tenant's ticket for a write, locked until tx ends,
// with the operation ID that created it.
func (Mirror) LockTicket(tx *gorm.DB, tenant string, id uuid.UUID) (t Ticket, createdBy string, err error) {
	row, err := lockTicket(tx, tenant, id)
	if err != nil {
		return Ticket{}, "", err
	}
	t, err = row.toTicket()
	return t, deref(row.OperationID), err
}

// InsertTicket inserts the ticket a tracked create proved, with its
// created event, under the operation's long-claimed key.
func (m Mirror) InsertTicket(tx *gorm.DB, tenant, reporter string, ticketID, eventID, opID uuid.UUID, n NewTicket) (Ticket, bool, error) {
	return m.s.insertTicket(tx, nil, tenant, reporter, ticketID, eventID, opID, n)
}

// CheckParent refuses parentID as the parent of the ticket ticketID, not
// stored yet, as setting it would (subtasks.Check): a tracker-backed create
// checks its parent in the claim, before anything is sent.
func (Mirror) CheckParent(tx *gorm.DB, tenant string, ticketID uuid.UUID, parentID string) error {
	_, err := subtasks.Check(tx, tenant, subtasks.Ref{ID: ticketID.String(), Key: "the new ticket"}, parentID)
	return err
}

// SetParent makes parentID the parent of t, just inserted by tx
// (subtasks.Set): a tracker-backed create keeps its parent in ticketd.
func (Mirror) SetParent(tx *gorm.DB, tenant string, t Ticket, parentID string) error {
	_, err := subtasks.Set(tx, tenant, subtasks.Ref{ID: t.ID.String(), Key: t.Key}, parentID)
	return err
}

// InsertComment adds the comment a tracked comment proved, with its event.
func (Mirror) InsertComment(tx *gorm.DB, tenant, author string, opID, commentID, eventID, ticketID uuid.UUID, body string) (Comment, Ticket, error) {
	return insertComment(tx, tenant, author, opID, commentID, eventID, ticketID, body)
}

// ApplyUpdate writes the update a tracked edit proved, with its event.
func (Mirror) ApplyUpdate(tx *gorm.DB, tenant, actor string, opID, eventID, ticketID uuid.UUID, n TicketUpdate) (Ticket, Changes, error) {
	return applyUpdate(tx, tenant, actor, opID, eventID, ticketID, n)
}

// SetExternal points the ticket at the tracker issue it mirrors.
func (Mirror) SetExternal(tx *gorm.DB, tenant string, ticketID uuid.UUID, extID, extURL string) error {
	// UpdateColumns: mirroring the issue is not a change of the ticket, so
	// updated_at stays as the ticket's own writes left it.
	err := tx.Model(&ticketRow{}).Where("tenant_id = ? AND id = ?", tenant, ticketID.String()).
		UpdateColumns(map[string]any{"external_id": extID, "external_url": extURL}).Error
	if err != nil {
		return fmt.Errorf("%w: mirror issue on ticket: %v", ErrUnavailable, err)
	}
	return nil
}

// Enqueue hands a mirrored write's event to the outbox inside tx.
func (m Mirror) Enqueue(tx *gorm.DB, ev WriteEvent) error { return m.s.enqueue(tx, ev) }

// Ticket reads a ticket by its UUID.
func (m Mirror) Ticket(ctx context.Context, tenant, id string) (Ticket, error) {
	return m.s.ticketByID(ctx, tenant, id)
}

// Event reads an event by its UUID.
func (m Mirror) Event(ctx context.Context, tenant, id string) (Event, error) {
	return m.s.eventByID(ctx, tenant, id)
}

// Comment reads a comment by its UUID.
func (m Mirror) Comment(ctx context.Context, tenant, id string) (Comment, error) {
	return m.s.commentByID(ctx, tenant, id)
}
