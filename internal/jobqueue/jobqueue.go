// Package jobqueue opens River's driver over ticketd's own database pool, on
// either dialect, for every package that keeps durable jobs (the webhook
// outbox in internal/webhooks, tracker reconciliation in internal/reconciler),
// so jobs are inserted in the same transaction as the write that makes them.
package jobqueue

import (
	"database/sql"
	"fmt"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/ticketd/ticketd/internal/db"
)

// Driver is River's driver for d's dialect over d's connection pool.
func Driver(d *db.DB) (riverdriver.Driver[*sql.Tx], error) {
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		return nil, fmt.Errorf("job queue: %w", err)
	}
	switch d.Dialect {
	case db.Postgres:
		return riverdatabasesql.New(sqlDB), nil
	case db.SQLite:
		return riversqlite.New(sqlDB), nil
	}
	return nil, fmt.Errorf("job queue: unsupported dialect %q", d.Dialect)
}
