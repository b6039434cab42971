package tickets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/ticketd/ticketd/internal/db"
)

// One ticket by reference: read for an answer (GetTicket) or, inside a
// write, locked (lockTicket).

var ticketKeyPattern = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]{0,9})-([1-9][0-9]{0,18})$`)

// GetTicket returns the tenant's ticket by UUID or by key (e.g. SUP-42, any case).
//
// Errors: ErrInvalid (neither a UUID nor a key), ErrNotFound, ErrUnavailable.
func (s *Service) GetTicket(ctx context.Context, tenant, idOrKey string) (Ticket, error) {
	idOrKey = strings.TrimSpace(idOrKey)
	if id, err := uuid.Parse(idOrKey); err == nil && len(idOrKey) == 36 {
		return s.ticketByID(ctx, tenant, id.String())
	}
	if !ticketKeyPattern.MatchString(idOrKey) {
		return Ticket{}, invalidField("id", "must be a ticket UUID or a key like SUP-42, got %q", idOrKey)
	}
	return s.ticketWhere(ctx, readTicketByKey, tenant, strings.ToUpper(idOrKey))
}

func (s *Service) ticketByID(ctx context.Context, tenant, id string) (Ticket, error) {
	return s.ticketWhere(ctx, readTicketByID, tenant, id)
}

// ticketWhere reads the tenant's ticket that by selects, scanned by hand. On
// PostgreSQL it goes to pgx directly (db.QueryFirst), without database/sql's
// and GORM's statement building: an update's replay reads its ticket here
// when the one read before the ledger predates the recorded event.
func (s *Service) ticketWhere(ctx context.Context, by ticketRead, tenant, value string) (Ticket, error) {
	var (
		row   ticketRow
		found bool
		err   error
	)
	if s.db.Dialector.Name() == "postgres" {
		st := db.Statement{SQL: by.postgres, Args: []any{tenant, value}, Table: "tickets"}
		found, err = db.QueryFirst(ctx, s.db, st, row.columns()...)
	} else {
		var rows *sql.Rows
		if rows, err = s.db.WithContext(ctx).Raw(by.sqlite, tenant, value).Rows(); err == nil {
			found, err = scanFirst(rows, row.columns()...)
		}
	}
	switch {
	case err != nil:
		return Ticket{}, fmt.Errorf("%w: read ticket: %v", ErrUnavailable, err)
	case !found:
		return Ticket{}, fmt.Errorf("ticket: %w", ErrNotFound)
	}
	return row.toTicket()
}

// ticketRead is ticketWhere's statement, in each dialect's placeholders, by
// the tenant and one column unique within it.
type ticketRead struct{ postgres, sqlite string }

var (
	readTicketByID  = newTicketRead("id")
	readTicketByKey = newTicketRead("key")
)

func newTicketRead(column string) ticketRead {
	q := "SELECT " + ticketColumns + " FROM tickets WHERE tenant_id = %s AND " + column + " = %s"
	return ticketRead{postgres: fmt.Sprintf(q, "$1", "$2"), sqlite: fmt.Sprintf(q, "?", "?")}
}

// lockTicket reads the tenant's ticket for a write and, on PostgreSQL, locks
// its row until the transaction ends, so the ticket's writers take turns:
// each sees the version its predecessor committed (Read Committed re-reads a
// row it waited for). SQLite serialises all writers already. The lock is
// FOR NO KEY UPDATE, the one an UPDATE of non-key columns takes: it lets
// another transaction reference the row (a sub-task's parent_id foreign
// key takes KEY SHARE), so two moves of tickets under each other wait on
// the tree lock (internal/subtasks) instead of deadlocking on each other's rows.
func lockTicket(tx *gorm.DB, tenant string, id uuid.UUID) (ticketRow, error) {
	var row ticketRow
	err := tx.Clauses(clause.Locking{Strength: "NO KEY UPDATE"}).Select(ticketColumns).
		Where("tenant_id = ? AND id = ?", tenant, id.String()).Take(&row).Error
	switch {
	case errors.Is(err, gorm.ErrRecordNotFound):
		return ticketRow{}, fmt.Errorf("ticket: %w", ErrNotFound)
	case err != nil:
		return ticketRow{}, fmt.Errorf("%w: lock ticket: %v", ErrUnavailable, err)
	}
	return row, nil
}
