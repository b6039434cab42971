package tickets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/subtasks"
)

// ActionCreateTicket is the ledger action of CreateTicket; it scopes
// operation IDs together with the tenant.
const ActionCreateTicket = "create_ticket"

// CreateResult is the outcome of CreateTicket.
type CreateResult struct {
	OperationID uuid.UUID
	Ticket      Ticket
	Replayed    bool // the ticket was created by an earlier call with this ID
}

// CreateTicket creates one ticket per (tenant, operation ID): a retry with the
// same ID and the same normalised input returns the first call's ticket with
// Replayed set, and never creates another. The ticket, its per-project number
// and the operation record commit in one transaction.
//
// Errors: ErrInvalid (bad input, or unknown project; nothing recorded, the
// ID stays usable), operations.ErrConflict, operations.ErrInProgress,
// operations.ErrOutcomeUnknown, ErrUnavailable, operations.ErrUnavailable.
func (s *Service) CreateTicket(ctx context.Context, c Caller, opID operations.ID, in NewTicket) (res CreateResult, err error) {
	defer func() { s.report(ActionCreateTicket, res.Replayed, err) }()
	if err := requireID(opID); err != nil {
		return CreateResult{}, err
	}
	tenant, reporter, id := c.Tenant, c.Subject, opID.UUID()
	n, err := Normalize(in)
	if err != nil {
		return CreateResult{}, err
	}
	if err := checkActor(reporter); err != nil {
		return CreateResult{}, err
	}
	if err := s.enroll(ctx, c); err != nil {
		return CreateResult{}, err
	}
	if _, err := s.resolveNewParent(ctx, tenant, &n); err != nil {
		return CreateResult{}, err
	}
	b, err := s.backendOf(ctx, tenant, n.ProjectID)
	if err != nil {
		return CreateResult{OperationID: id}, fmt.Errorf("create ticket: %w", err)
	}
	return b.CreateTicket(ctx, Write{Tenant: tenant, Actor: reporter, ID: id}, n)
}

// createLocal is CreateTicket in a local project (or none: the insert
// reports an unknown project).
func (s *Service) createLocal(ctx context.Context, w Write, n NewTicket) (_ CreateResult, err error) {
	tenant, reporter, id := w.Tenant, w.Actor, w.ID
	key := operations.Key{Tenant: tenant, Action: ActionCreateTicket, OperationID: id}
	ticketID, eventID := uuid.Must(uuid.NewV7()), uuid.Must(uuid.NewV7())
	var created Ticket
	fp := Fingerprint(n)
	gate := s.gate(key, fp, reporter, createProposal(id.String(), n))
	var replayed ticketRow
	replay := operations.Replay{Join: ticketResult, Into: replayed.columns()}
	single := func(db *gorm.DB, claim *operations.Fold) (ran bool, err error) {
		created, ran, err = s.createAlone(db, claim, w, ticketID, eventID, n)
		return ran, err
	}
	out, err := s.ledger.RunAutocommit(ctx, key, fp, ticketID.String(), gate, replay, single, func(tx *gorm.DB, claim *operations.Fold) error {
		var unsubscribed bool
		if created, unsubscribed, err = s.insertTicket(tx, claim, tenant, reporter, ticketID, eventID, id, n); err != nil || !claim.Won() {
			return err
		}
		if n.Parent != "" {
			if _, err := subtasks.Set(tx, tenant, subtasks.Ref{ID: ticketID.String(), Key: created.Key}, n.Parent); err != nil {
				return err
			}
		}
		return s.enqueue(tx, WriteEvent{ID: eventID, Tenant: tenant, Kind: EventCreated, OperationID: id, At: created.CreatedAt, Ticket: created,
			Unsubscribed: unsubscribed})
	})
	if err != nil {
		return CreateResult{OperationID: id}, fmt.Errorf("create ticket: %w", err)
	}
	if !out.Replayed {
		return CreateResult{OperationID: id, Ticket: created}, nil
	}
	if out.ResultRead {
		t, err := replayed.toTicket()
		return CreateResult{OperationID: id, Ticket: t, Replayed: true}, err
	}
	t, err := s.ticketByID(ctx, tenant, out.Record.ResultID)
	if err != nil {
		return CreateResult{OperationID: id}, fmt.Errorf("create ticket: read committed ticket: %w", err)
	}
	return CreateResult{OperationID: id, Ticket: t, Replayed: out.Replayed}, nil
}

// insertTicket allocates the project's next number and inserts the ticket
// and its `created` event, inside the ledger's transaction. On PostgreSQL
// the number comes from the project's sequence, which a rollback does not
// return (a gap, never a reuse); on SQLite from projects.next_number, which
// it does. An inline claim (operations.Fold.Inline) runs in the same
// statement, and when it does not win nothing else is written; a nil claim
// is none (a tracked create's mirror, whose key was claimed long before).
// Unsubscribed is the outbox's probe as the statement read it
// (WriteEvent.Unsubscribed; always false on SQLite, where the outbox reads).
func (s *Service) insertTicket(tx *gorm.DB, claim *operations.Fold, tenant, reporter string, ticketID, eventID, opID uuid.UUID, n NewTicket) (t Ticket, unsubscribed bool, err error) {
	row, created, err := newTicketRows(tenant, reporter, ticketID, eventID, opID, n)
	if err != nil {
		return Ticket{}, false, err
	}
	var found bool
	if tx.Dialector.Name() == "postgres" {
		found, unsubscribed, err = insertTicketPostgres(tx, s.writeSQL, claim, &row, created)
		if err == nil {
			s.noteSubscribed(tenant, !unsubscribed)
		}
	} else {
		found, err = insertTicketSteps(tx, &row, created)
	}
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Ticket{}, false, errRecordPruned
	case err != nil:
		return Ticket{}, false, err
	case claim != nil && !claim.Won():
		return Ticket{}, false, nil
	case !found:
		return Ticket{}, false, unknownProject(tx, tenant, n.ProjectID)
	}
	t, err = row.toTicket()
	return t, unsubscribed, err
}

// errRecordPruned: only the unique (tenant, operation_id) index of tickets
// can refuse a create's insert, so the ticket exists but its operation
// record is gone (pruned). Creating another would be exactly the duplicate
// the ledger exists to stop.
var errRecordPruned = fmt.Errorf("%w: a ticket was already created with this operation ID", operations.ErrExpired)

// newTicketRows are a new ticket and its `created` event as a create
// writes them.
func newTicketRows(tenant, reporter string, ticketID, eventID, opID uuid.UUID, n NewTicket) (ticketRow, Event, error) {
	// PostgreSQL keeps microseconds: the answer to the first call must read
	// exactly like every later read and replay.
	now := time.Now().UTC().Truncate(time.Microsecond)
	labels, err := json.Marshal(n.Labels)
	if err != nil {
		return ticketRow{}, Event{}, fmt.Errorf("encode labels: %w", err)
	}
	opIDText := opID.String()
	row := ticketRow{
		ID: ticketID.String(), TenantID: tenant, ProjectID: n.ProjectID,
		Title: n.Title, Description: n.Description,
		Priority: string(n.Priority), Status: string(StatusOpen), Labels: string(labels), Reporter: reporter,
		OperationID: &opIDText, Version: 1, CreatedAt: now, UpdatedAt: now,
	}
	created := Event{
		ID: eventID, TicketID: ticketID, Seq: 1, Version: 1, Kind: EventCreated, Actor: reporter,
		OperationID: opID, Changes: Changes{}, CreatedAt: now,
	}
	return row, created, nil
}

// insertTicketSteps allocates the number, then inserts the ticket and its
// event, one statement each. It reports false when the project does not
// exist.
func insertTicketSteps(tx *gorm.DB, row *ticketRow, created Event) (bool, error) {
	var (
		key  string
		next int64
	)
	rows, err := tx.Raw(`UPDATE projects SET next_number = next_number + 1
		WHERE tenant_id = ? AND id = ? RETURNING key, next_number`, row.TenantID, row.ProjectID).Rows()
	found := false
	if err == nil {
		found, err = scanFirst(rows, &key, &next)
	}
	if err != nil {
		return false, fmt.Errorf("%w: allocate ticket number: %v", ErrUnavailable, err)
	}
	if !found {
		return false, nil
	}
	row.Number = next - 1
	row.Key = fmt.Sprintf("%s-%d", key, row.Number)
	if err := tx.Create(row).Error; err != nil {
		if errors.Is(err, gorm.ErrDuplicatedKey) {
			return false, err
		}
		return false, fmt.Errorf("%w: insert ticket: %v", ErrUnavailable, err)
	}
	return true, insertEvent(tx, row.TenantID, created)
}

// insertTicketPostgres runs the create statement of st, claiming when claim
// is inline, and tells claim what came of it. It reports found false when
// the project does not exist, and unsubscribed as the outbox's probe read.
func insertTicketPostgres(tx *gorm.DB, st writeStatements, claim *operations.Fold, row *ticketRow, created Event) (found, unsubscribed bool, err error) {
	args, err := createArgs(row, created)
	if err != nil {
		return false, false, err
	}
	query := st.create
	if claim != nil && claim.Inline() {
		query = st.createClaiming
		claim.Args(args)
	}
	var (
		won, subscribed bool
		number          sql.NullInt64
		key             sql.NullString
	)
	_, err = rawFirst(tx, query, args, &won, &number, &key, &subscribed)
	if claim != nil && claim.Inline() {
		claim.Report(won, err)
	}
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return false, false, err
	case err != nil:
		return false, false, fmt.Errorf("%w: insert ticket: %v", ErrUnavailable, err)
	}
	row.Number, row.Key = number.Int64, key.String
	return number.Valid, !subscribed, nil
}

// createArgs are the create statements' parameters for row and its event,
// in a map sized for the claim's too, so that it never grows.
func createArgs(row *ticketRow, created Event) (map[string]any, error) {
	changes, err := encodeChanges(created.Changes)
	if err != nil {
		return nil, err
	}
	args := make(map[string]any, 24)
	args["tenant"], args["project"], args["id"], args["title"] = row.TenantID, row.ProjectID, row.ID, row.Title
	args["description"], args["priority"], args["status"] = row.Description, row.Priority, row.Status
	args["labels"], args["reporter"], args["op"], args["now"] = row.Labels, row.Reporter, *row.OperationID, row.CreatedAt
	args["event"], args["kind"], args["changes"] = created.ID.String(), string(created.Kind), changes
	return args, nil
}

// unknownProject builds the invalid-input error for a project the tenant does
// not have, naming the ones it does so the caller can correct itself. db
// carries its context: inside a write, the ledger's detached one.
func unknownProject(db *gorm.DB, tenant, projectID string) error {
	var ids []string
	if err := db.Model(&projectRow{}).Where("tenant_id = ?", tenant).
		Order("id").Limit(20).Pluck("id", &ids).Error; err != nil {
		return fmt.Errorf("%w: list projects: %v", ErrUnavailable, err)
	}
	if len(ids) == 0 {
		return unknownProjectError{invalidField("project_id", "unknown project %q; this tenant has no projects yet", projectID)}
	}
	return unknownProjectError{invalidField("project_id", "unknown project %q; known projects: %s", projectID, strings.Join(ids, ", "))}
}

// ErrUnknownProject marks the invalid input of a project ID the tenant does
// not have, so that a transport can add how its callers list the projects
// (MCP: list_projects). The error is also a *ValidationError.
var ErrUnknownProject = errors.New("unknown project")

// unknownProjectError is a *ValidationError about project_id that is
// ErrUnknownProject too.
type unknownProjectError struct{ *ValidationError }

func (e unknownProjectError) Is(target error) bool { return target == ErrUnknownProject }
func (e unknownProjectError) Unwrap() error        { return e.ValidationError }

// Would says what CreateTicket would do with an operation ID.
type Would string

// What a preview predicts.
const (
	WouldCreate   Would = "create"
	WouldReplay   Would = "replay"
	WouldConflict Would = "conflict"
)

// Preview is the read-only answer of PreviewTicket.
type Preview struct {
	Ticket           NewTicket // normalised, its Parent resolved to the parent's UUID
	ParentKey        string    // the parent's key; empty without one
	Fingerprint      string
	OperationID      *uuid.UUID
	Would            Would  // set when an operation ID was given
	ExistingTicketID string // set when Would is replay or conflict and a ticket exists
}

// PreviewTicket validates and normalises a ticket, its parent checked as
// CreateTicket checks it when it would create, and, given an operation ID, says whether
// CreateTicket would create, replay or conflict. It writes nothing. The zero ID skips the prediction.
//
// Errors: ErrInvalid, ErrNotFound (the parent), ErrUnavailable.
func (s *Service) PreviewTicket(ctx context.Context, tenant string, opID operations.ID, in NewTicket) (Preview, error) {
	var id *uuid.UUID
	if !opID.IsZero() {
		parsed := opID.UUID()
		id = &parsed
	}
	n, err := Normalize(in)
	if err != nil {
		return Preview{}, err
	}
	if err := s.projectExists(ctx, tenant, n.ProjectID); err != nil {
		return Preview{}, err
	}
	parentKey, err := s.resolveNewParent(ctx, tenant, &n)
	if err != nil {
		return Preview{}, err
	}
	p := Preview{Ticket: n, ParentKey: parentKey, Fingerprint: Fingerprint(n), OperationID: id}
	if id == nil {
		return p, s.checkNewParent(ctx, tenant, n)
	}
	rec, err := s.ledger.Lookup(ctx, operations.Key{Tenant: tenant, Action: ActionCreateTicket, OperationID: *id})
	switch {
	case errors.Is(err, operations.ErrNotFound):
		p.Would = WouldCreate
		if err := s.checkNewParent(ctx, tenant, n); err != nil {
			return Preview{}, err
		}
	case err != nil:
		return Preview{}, fmt.Errorf("preview ticket: %w", err)
	case rec.Fingerprint == p.Fingerprint:
		p.Would, p.ExistingTicketID = WouldReplay, rec.ResultID
	default:
		p.Would, p.ExistingTicketID = WouldConflict, rec.ResultID
	}
	return p, nil
}

func (s *Service) projectExists(ctx context.Context, tenant, projectID string) error {
	var count int64
	if err := s.db.WithContext(ctx).Model(&projectRow{}).
		Where("tenant_id = ? AND id = ?", tenant, projectID).Count(&count).Error; err != nil {
		return fmt.Errorf("%w: look up project: %v", ErrUnavailable, err)
	}
	if count == 0 {
		return unknownProject(s.db.WithContext(ctx), tenant, projectID)
	}
	return nil
}
