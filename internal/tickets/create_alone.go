package tickets

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/operations"
)

// createAloneSQL is createTicketSQL for a create that is one statement
// outside a transaction (operations.RunAutocommit): PostgreSQL commits it
// as it ends, so it claims the key, and so does anything, only when it is
// the whole write, when the project exists (a record whose create then
// found no project would commit without a ticket) and the outbox's probe
// (subscribed) says no subscription wants the event (the outbox's inserts
// could not join the statement). Its row adds both, so the create can tell
// a missing project from a key another call holds, and knows when it needs
// a transaction after all.
func createAloneSQL(subscribed string) string {
	return `WITH can AS MATERIALIZED (
	SELECT ` + subscribed + ` AS subscribed,
		EXISTS (SELECT 1 FROM projects WHERE tenant_id = @tenant AND id = @project) AS project
), ` + operations.ClaimWithIf(`SELECT project AND NOT subscribed FROM can`) + `, ` + createStepsSQL(operations.ClaimWon) + `
SELECT ` + operations.ClaimWon + `, (SELECT number FROM t), (SELECT key FROM t), subscribed, project FROM can`
}

// createAlone is a fresh create in one statement with nothing to commit beside
// it (createAloneSQL): BEGIN and COMMIT are two round trips of the four a
// create costs otherwise. It reads only by key, so it is planned once per
// connection (db.Statement.ByKey), not for every create: the claim's record by
// its conflict, the tombstone by the only index its table has, the outbox's
// probe the tenant's subscriptions by the tenant_id that leads the only index
// of theirs (SubscriptionProbe). Of projects, whose (tenant_id, key) index
// also starts with the tenant, a plan kept from small tables reads at worst
// the tenant's projects, a few rows; the foreign key from tickets does as much
// (docs/perf.md). A create with a parent needs the transaction (subtasks.Set
// locks the tenant's tree and writes), and so does one whose outbox reads the
// subscriptions itself or whose tenant has a subscription: ran false, with
// nothing written, sends those to createLocal's transaction. The outbox's
// check of the event runs before the statement, since nothing can fail after
// it.
func (s *Service) createAlone(g *gorm.DB, claim *operations.Fold, w Write, ticketID, eventID uuid.UUID, n NewTicket) (t Ticket, ran bool, err error) {
	if n.Parent != "" || s.writeSQL.createAlone.SQL == "" || s.lastSubscribed(w.Tenant) {
		return Ticket{}, false, nil
	}
	row, created, err := newTicketRows(w.Tenant, w.Actor, ticketID, eventID, w.ID, n)
	if err != nil {
		return Ticket{}, false, err
	}
	ev := WriteEvent{ID: eventID, Tenant: w.Tenant, Kind: EventCreated, OperationID: w.ID, At: created.CreatedAt}
	if err := checkEvent(s.outbox, ev); err != nil {
		return Ticket{}, false, err
	}
	args, err := createArgs(&row, created)
	if err != nil {
		return Ticket{}, false, err
	}
	claim.Args(args)
	positional, err := s.writeSQL.createAlone.Args(args)
	if err != nil {
		return Ticket{}, false, err
	}
	var (
		won, subscribed, project bool
		number                   sql.NullInt64
		key                      sql.NullString
	)
	st := db.Statement{SQL: s.writeSQL.createAlone.SQL, Args: positional, Table: "tickets", Verb: "INSERT", ByKey: true}
	_, err = db.QueryFirst(g.Statement.Context, g, st, &won, &number, &key, &subscribed, &project)
	err = translated(err)
	claim.Report(won, err)
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return Ticket{}, true, errRecordPruned
	case err != nil:
		return Ticket{}, true, fmt.Errorf("%w: insert ticket: %v", ErrUnavailable, err)
	}
	s.noteSubscribed(w.Tenant, subscribed)
	switch {
	case subscribed:
		return Ticket{}, false, nil
	case !project:
		return Ticket{}, true, unknownProject(g, w.Tenant, n.ProjectID)
	case !won:
		return Ticket{}, true, nil // the ledger reads who holds the key
	}
	row.Number, row.Key = number.Int64, key.String
	t, err = row.toTicket()
	return t, true, err
}

// lastSubscribed reports whether the tenant's last create on PostgreSQL
// found a subscription: its next create then goes straight to a
// transaction rather than first run the one statement that would find it
// again and write nothing. A hint only: that statement checks for itself.
func (s *Service) lastSubscribed(tenant string) bool {
	_, ok := s.subscribed.Load(tenant)
	return ok
}

// noteSubscribed records what a create's statement read of the outbox's
// probe for the tenant (lastSubscribed). Only tenants that have a
// subscription are kept, and only with an outbox that has a probe.
func (s *Service) noteSubscribed(tenant string, subscribed bool) {
	switch {
	case s.writeSQL.createAlone.SQL == "":
	case subscribed:
		s.subscribed.Store(tenant, struct{}{})
	case s.lastSubscribed(tenant):
		s.subscribed.Delete(tenant)
	}
}

// translated is err with gorm.ErrDuplicatedKey for a unique violation, as
// GORM translates its own statements' errors: db.Query is not GORM's.
func translated(err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return fmt.Errorf("%w: %w", gorm.ErrDuplicatedKey, err)
	}
	return err
}
