package tickets

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/operations"
)

// An update's write inside the ledger's transaction: lock the ticket (with
// the claim, on PostgreSQL), check the update against it, write the change
// and its history event. PostgreSQL runs the claim with the row lock, and the
// change with its event, as one statement each, which saves three round
// trips per update (docs/perf.md); SQLite, one writer at a time and in
// process, keeps the steps.

// applyUpdate runs inside the ledger's transaction: it locks the ticket and
// writes the update (writeUpdate).
func applyUpdate(tx *gorm.DB, tenant, actor string, opID, eventID, ticketID uuid.UUID, n TicketUpdate) (Ticket, Changes, error) {
	row, err := lockTicket(tx, tenant, ticketID)
	if err != nil {
		return Ticket{}, nil, err
	}
	return writeUpdate(tx, row, tenant, actor, opID, eventID, n)
}

// writeUpdate checks the expected version and the status move against row,
// the ticket as committed now and locked by this transaction, then writes
// the changed fields with the next version and appends the event.
func writeUpdate(tx *gorm.DB, row ticketRow, tenant, actor string, opID, eventID uuid.UUID, n TicketUpdate) (Ticket, Changes, error) {
	cur, err := row.toTicket()
	if err != nil {
		return Ticket{}, nil, err
	}
	if n.IfVersion != nil && *n.IfVersion != cur.Version {
		return Ticket{}, nil, &VersionConflictError{Expected: *n.IfVersion, Current: cur}
	}
	next, changes, err := n.applyTo(cur)
	if err == nil && n.Parent != nil {
		err = reparent(tx, tenant, cur, *n.Parent, changes)
	}
	if err != nil {
		return Ticket{}, nil, err
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	var set map[string]any
	if len(changes) > 0 {
		next.Version, next.UpdatedAt = cur.Version+1, now
		labels, err := json.Marshal(next.Labels)
		if err != nil {
			return Ticket{}, nil, fmt.Errorf("encode labels: %w", err)
		}
		var assignee *string
		if next.Assignee != "" {
			assignee = &next.Assignee
		}
		// Sized for updateWithEventPostgres' parameters too, so the map never grows.
		set = make(map[string]any, 18)
		set["title"], set["description"], set["priority"] = next.Title, next.Description, string(next.Priority)
		set["status"], set["labels"], set["assignee"] = string(next.Status), string(labels), assignee
		set["version"], set["updated_at"] = next.Version, now
	}
	e := Event{
		ID: eventID, TicketID: cur.ID, Version: next.Version, Kind: EventUpdated, Actor: actor,
		OperationID: opID, Changes: changes, CreatedAt: now,
	}
	if tx.Dialector.Name() == "postgres" {
		err = updateWithEventPostgres(tx, tenant, cur, set, e)
	} else {
		err = updateWithEventSteps(tx, tenant, cur, set, e)
	}
	return next, changes, err
}

// updateWithEventSteps writes set (nil: nothing changed), then the event at
// the ticket's next history position, one statement each.
func updateWithEventSteps(tx *gorm.DB, tenant string, cur Ticket, set map[string]any, e Event) error {
	if set != nil {
		// The version condition restates the lock: a write can never skip one.
		res := tx.Model(&ticketRow{}).Where("tenant_id = ? AND id = ? AND version = ?", tenant, cur.ID.String(), cur.Version).
			Updates(set)
		switch {
		case res.Error != nil:
			return fmt.Errorf("%w: update ticket: %v", ErrUnavailable, res.Error)
		case res.RowsAffected != 1:
			return fmt.Errorf("%w: ticket %s changed under its row lock", ErrUnavailable, cur.Key)
		}
	}
	seq, err := nextSeq(tx, tenant, cur.ID)
	if err != nil {
		return err
	}
	e.Seq = seq
	return insertEvent(tx, tenant, e)
}

// lockClaimingSQL is the ledger's claim (operations.ClaimWith) and, only when
// it won, lockTicket's SELECT … FOR NO KEY UPDATE, in one statement. The claim runs
// first (operations.ClaimWon), so the wait for a concurrent holder of the key
// is bounded by the lock timeout and the wait for the ticket's row lock, a
// concurrent update's, is not. It returns one row: whether the claim won,
// whether the ticket was found, what subscribed, the outbox's probe
// (subscribedSQL), says, then the ticket's columns (NULL when not found).
func lockClaimingSQL(subscribed string) string {
	return `WITH ` + operations.ClaimWith + `
SELECT c.won, t.id IS NOT NULL, ` + subscribed + `, t.` + strings.ReplaceAll(ticketColumns, ", ", ", t.") + `
FROM (SELECT ` + operations.ClaimWon + ` AS won) AS c
LEFT JOIN LATERAL (
	SELECT ` + ticketColumns + ` FROM tickets
	WHERE tenant_id = @tenant AND id = CAST(@id AS uuid) AND c.won
	FOR NO KEY UPDATE
) AS t ON true`
}

// lockTicketClaiming is lockTicket for a write whose claim may be inline:
// then it claims and locks in one round trip and tells claim what came of
// it, and reports unsubscribed as the outbox's probe read (always false
// otherwise: the outbox reads for itself). A claim that did not win locks
// nothing and returns the zero row.
func (s *Service) lockTicketClaiming(tx *gorm.DB, claim *operations.Fold, tenant string, id uuid.UUID) (row ticketRow, unsubscribed bool, err error) {
	if !claim.Inline() {
		row, err = lockTicket(tx, tenant, id)
		return row, false, err
	}
	args := make(map[string]any, 10) // with the claim's, so the map never grows
	args["tenant"], args["id"] = tenant, id.String()
	claim.Args(args)
	var won, found, subscribed bool
	rows, err := tx.Raw(s.writeSQL.lockClaiming, args).Rows()
	if err == nil {
		err = scanClaimedTicket(rows, &won, &found, &subscribed, &row)
	}
	claim.Report(won, err)
	switch {
	case err != nil:
		return ticketRow{}, false, fmt.Errorf("%w: lock ticket: %v", ErrUnavailable, err)
	case won && !found:
		return ticketRow{}, false, fmt.Errorf("ticket: %w", ErrNotFound)
	}
	return row, !subscribed, nil
}

// scanClaimedTicket reads lockClaimingSQL's row and closes rows. The row is
// read twice when the ticket was locked: first to learn whether its columns
// are NULL (into one throwaway target), then into row.
func scanClaimedTicket(rows *sql.Rows, won, found, subscribed *bool, row *ticketRow) (err error) {
	defer func() {
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
	}()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errors.New("the claim returned no row")
	}
	cols := row.columns()
	dest := make([]any, 3, 3+len(cols))
	dest[0], dest[1], dest[2] = won, found, subscribed
	var skip any
	for range cols {
		dest = append(dest, &skip)
	}
	if err := rows.Scan(dest...); err != nil || !*won || !*found {
		return err
	}
	copy(dest[3:], cols)
	return rows.Scan(dest...)
}

// updateEventSQL is updateWithEventSteps in one statement: the change (when
// changed) and the event at the next history position. It runs under the
// ticket's row lock, taken by an earlier statement, so its snapshot holds
// every event the lock's earlier holders committed, and MAX(seq) + 1 is the
// next position as nextSeq would read it. The version condition restates
// the lock: no row means the ticket changed under it.
func updateEventSQL(changed bool) string {
	target := `SELECT CAST(@id AS uuid) AS id`
	if changed {
		target = `UPDATE "tickets" SET title = @title, description = @description, priority = @priority,
		status = @status, labels = @labels, assignee = @assignee, version = @version,
		updated_at = CAST(@updated_at AS timestamptz)
	WHERE tenant_id = @tenant AND id = CAST(@id AS uuid) AND version = @current
	RETURNING id`
	}
	return `WITH u AS (
	` + target + `
)
INSERT INTO "ticket_events" (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
SELECT CAST(@event AS uuid), @tenant, u.id,
	(SELECT COALESCE(MAX(seq), 0) + 1 FROM ticket_events WHERE tenant_id = @tenant AND ticket_id = u.id),
	@version, @kind, @actor, CAST(@op AS uuid), @changes, CAST(@now AS timestamptz)
FROM u
RETURNING seq`
}

// The update statement with a change, and for an update that changes nothing.
var (
	updateEventChanged   = updateEventSQL(true)
	updateEventUnchanged = updateEventSQL(false)
)

// updateWithEventPostgres runs updateEventSQL with set, the changed columns
// (nil: none), and e, the event.
func updateWithEventPostgres(tx *gorm.DB, tenant string, cur Ticket, set map[string]any, e Event) error {
	changes, err := encodeChanges(e.Changes)
	if err != nil {
		return err
	}
	query, args := updateEventUnchanged, set
	if set != nil {
		query = updateEventChanged
		args["current"] = cur.Version
	} else {
		args = make(map[string]any, 9)
	}
	args["tenant"], args["id"], args["event"], args["version"] = tenant, cur.ID.String(), e.ID.String(), e.Version
	args["kind"], args["actor"], args["op"], args["changes"], args["now"] = string(e.Kind), e.Actor, e.OperationID.String(), changes, e.CreatedAt
	var seq int64
	found, err := rawFirst(tx, query, args, &seq)
	switch {
	case errors.Is(err, gorm.ErrDuplicatedKey):
		return eventExpired(e.Kind)
	case err != nil:
		return fmt.Errorf("%w: update ticket: %v", ErrUnavailable, err)
	case !found:
		return fmt.Errorf("%w: ticket %s changed under its row lock", ErrUnavailable, cur.Key)
	}
	return nil
}
