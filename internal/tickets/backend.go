package tickets

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Backend is where one project's writes go, chosen once per project
// (docs/architecture.md#backends): the local store (the ledger and the
// SQL) for a local project, the project's tracker (Options.Tracked,
// internal/tracked) for a tracker-backed one. The Service validates the
// input and resolves the ticket; the backend makes the write.
type Backend interface {
	CreateTicket(ctx context.Context, w Write, n NewTicket) (CreateResult, error)
	UpdateTicket(ctx context.Context, w Write, t Ticket, n TicketUpdate) (UpdateResult, error)
	AddComment(ctx context.Context, w Write, t Ticket, body string) (CommentResult, error)
}

// Write is one validated write's caller and operation ID.
type Write struct {
	Tenant string
	Actor  string // the reporter, editor or author
	ID     uuid.UUID
}

// Trackers connects tracker-backed projects (internal/tracked implements
// it): their backends, the check of a new project's backend, and what the
// operator's tools ask of an operation that went to a tracker.
type Trackers interface {
	// Backend returns the backend of a project stored with b.
	Backend(b tracker.Backend) Backend
	// CheckBackend validates (and trims, in place) a new project's backend.
	CheckBackend(ctx context.Context, tenant string, b *tracker.Backend) []FieldError
	// CredentialForEnv names the declared credential tenant may use that
	// reads env (MapRetiredTokenEnvs).
	CredentialForEnv(env, tenant string) (name string, ok bool)
	// Status adds to st what is known downstream; nothing for a local operation.
	Status(ctx context.Context, st *OperationStatus) error
	// Reconcile reconciles key now on behalf of actor; ok is false for an
	// operation that made no request to a tracker.
	Reconcile(ctx context.Context, key operations.Key, actor string) (ok bool, err error)
	// Resolve records actor's finding r on key, unknown or pending; ok is
	// false for an operation that made no request to a tracker.
	Resolve(ctx context.Context, key operations.Key, actor string, r Resolution) (ok bool, err error)
	// ReconcileDue is Service.ReconcileDue.
	ReconcileDue(ctx context.Context, key operations.Key) (next time.Time, done bool, err error)
}

// Connector makes the Trackers of a Service from the Mirror through which
// they write the local rows (internal/tracked.Options is one).
type Connector interface {
	Connect(m Mirror) Trackers
}

// local is the Backend of a local project: the ledger and the SQL,
// PostgreSQL and SQLite side by side.
type local struct{ s *Service }

func (l local) CreateTicket(ctx context.Context, w Write, n NewTicket) (CreateResult, error) {
	return l.s.createLocal(ctx, w, n)
}

func (l local) UpdateTicket(ctx context.Context, w Write, t Ticket, n TicketUpdate) (UpdateResult, error) {
	return l.s.updateLocal(ctx, w, t, n)
}

func (l local) AddComment(ctx context.Context, w Write, t Ticket, body string) (CommentResult, error) {
	return l.s.commentLocal(ctx, w, t, body)
}

// projectBackends is a project's backend as stored and as the Service
// writes through it; a project's backend never changes once created.
type projectBackends struct {
	stored *tracker.Backend // nil: local
	writes Backend
}

// backendOf returns where projectID's writes go: the local store for a
// local project and for one that does not exist (the local write reports
// that).
func (s *Service) backendOf(ctx context.Context, tenant, projectID string) (Backend, error) {
	p, err := s.projectBackends(ctx, tenant, projectID)
	return p.writes, err
}

// isLocal reports whether projectID's writes are the local store's.
func (s *Service) isLocal(ctx context.Context, tenant, projectID string) (bool, error) {
	b, err := s.backendOf(ctx, tenant, projectID)
	_, ok := b.(local)
	return ok, err
}

func (s *Service) projectBackends(ctx context.Context, tenant, projectID string) (projectBackends, error) {
	cacheKey := tenant + "\x00" + projectID
	if b, ok := s.backends.Load(cacheKey); ok {
		return b.(projectBackends), nil
	}
	var row projectRow
	err := s.db.WithContext(ctx).Where("tenant_id = ? AND id = ?", tenant, projectID).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return projectBackends{writes: local{s}}, nil
	case err != nil:
		return projectBackends{writes: local{s}}, fmt.Errorf("%w: look up project: %v", ErrUnavailable, err)
	}
	p := projectBackends{stored: row.toProject().Backend, writes: local{s}}
	if p.stored != nil {
		p.writes = unconnected{projectID}
		if s.trackers != nil {
			p.writes = s.trackers.Backend(*p.stored)
		}
	}
	s.backends.Store(cacheKey, p)
	return p, nil
}

// unconnected is the Backend of a tracker-backed project on a server with
// no tracker connector: every write is refused before anything is recorded.
type unconnected struct{ projectID string }

func (u unconnected) refuse() error {
	return invalidField("project_id", "project %s lives in a tracker, and this server has no tracker connector configured; nothing was written", u.projectID)
}

func (u unconnected) CreateTicket(_ context.Context, w Write, _ NewTicket) (CreateResult, error) {
	return CreateResult{OperationID: w.ID}, u.refuse()
}

func (u unconnected) UpdateTicket(_ context.Context, w Write, _ Ticket, _ TicketUpdate) (UpdateResult, error) {
	return UpdateResult{OperationID: w.ID}, u.refuse()
}

func (u unconnected) AddComment(_ context.Context, w Write, _ Ticket, _ string) (CommentResult, error) {
	return CommentResult{OperationID: w.ID}, u.refuse()
}
