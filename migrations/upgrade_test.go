package migrations

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
)

// TestLifecycleMigrationIndexesExistingTickets upgrades a SQLite database
// that already holds a ticket from milestone 1: the ticket gets version 1,
// no assignee, its `created` event, and is found by full-text search (the
// FTS5 index is rebuilt from the existing rows, not only fed by the triggers
// from now on).
func TestLifecycleMigrationIndexesExistingTickets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := db.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "old.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	p, err := provider(sqlDB, "sqlite")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 1); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (tenant_id, id, key, name, next_number, created_at) VALUES ('acme', 'support', 'SUP', 'Support', 2, ?)`, []any{now}},
		{`INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter, operation_id, created_at, updated_at)
			VALUES ('0190f3a2-7b1c-7d4e-8f00-000000000001', 'acme', 'support', 1, 'SUP-1', 'Printer on fire', 'smoke everywhere', 'high', 'open', '[]', 'alice',
			'0190f3a2-7b1c-7d4e-8f00-0000000000aa', ?, ?)`, []any{now, now}},
	} {
		if err := d.Gorm.Exec(stmt.sql, stmt.args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Up(ctx, sqlDB, "sqlite"); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Key      string
		Version  int64
		Assignee *string
	}
	err = d.Gorm.Raw(`SELECT key, version, assignee FROM tickets
		WHERE rowid IN (SELECT rowid FROM tickets_fts WHERE tickets_fts MATCH '"smoke"')`).Scan(&row).Error
	if err != nil || row.Key != "SUP-1" || row.Version != 1 || row.Assignee != nil {
		t.Errorf("after the upgrade, searching the old ticket gives %+v, %v; want SUP-1 at version 1, unassigned", row, err)
	}
	var event struct {
		ID, Kind, Actor, OperationID string
		Seq, Version                 int64
	}
	err = d.Gorm.Raw(`SELECT id, kind, actor, operation_id, seq, version FROM ticket_events WHERE ticket_id = '0190f3a2-7b1c-7d4e-8f00-000000000001'`).Scan(&event).Error
	if id, perr := uuid.Parse(event.ID); err != nil || perr != nil || id.Version() != 4 || id.Variant() != uuid.RFC4122 || event.Kind != "created" ||
		event.Actor != "alice" || event.OperationID != "0190f3a2-7b1c-7d4e-8f00-0000000000aa" || event.Seq != 1 || event.Version != 1 {
		t.Errorf("the old ticket's history = %+v, %v; want its created event with a version 4 UUID", event, err)
	}
}
