package operations

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"
)

// TestRolledBackOnlyWhenProven: a statement that commits by itself is
// known not to have committed only when PostgreSQL answered it with an
// ERROR (also as GORM translates it) or the driver never sent it; a lost
// connection, an ended context or a FATAL error leave it open.
func TestRolledBackOnlyWhenProven(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"error", &pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Code: "23505"}, true},
		{"localized error", &pgconn.PgError{Severity: "FEHLER", SeverityUnlocalized: "ERROR", Code: "55P03"}, true},
		{"translated by GORM", fmt.Errorf("%w: %w", gorm.ErrDuplicatedKey, &pgconn.PgError{Severity: "ERROR", Code: "23505"}), true},
		{"fatal", &pgconn.PgError{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "57P01"}, false},
		{"never sent", driver.ErrBadConn, true},
		{"connection lost", io.ErrUnexpectedEOF, false},
		{"context ended", context.DeadlineExceeded, false},
	} {
		if got := rolledBack(c.err); got != c.want {
			t.Errorf("%s: rolledBack(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
