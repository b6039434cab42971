package migrations

import (
	"context"
	"database/sql"
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
	d, sqlDB := sqliteAt(t, 1)
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
	err := d.Gorm.Raw(`SELECT key, version, assignee FROM tickets
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

// TestOperationUniqueMigrationKeepsEarlierReapplications upgrades a SQLite
// database holding a comment and an event applied twice under one operation
// ID (a retry after an early prune, before 00005): the upgrade succeeds, the
// second rows stay as history marked reapplied_after_prune, and a third
// application is refused.
func TestOperationUniqueMigrationKeepsEarlierReapplications(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, sqlDB := sqliteAt(t, 3)
	now := time.Now().UTC()
	ticketID, opID := uuid.NewString(), uuid.NewString()
	comment := `INSERT INTO comments (id, tenant_id, ticket_id, seq, author, body, operation_id, created_at) VALUES (?, 'acme', ?, ?, 'r', 'hi', ?, ?)`
	event := `INSERT INTO ticket_events (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
		VALUES (?, 'acme', ?, ?, 1, 'updated', 'r', ?, '{}', ?)`
	for _, stmt := range []struct {
		sql  string
		args []any
	}{
		{`INSERT INTO projects (tenant_id, id, key, name, next_number, created_at) VALUES ('acme', 'support', 'SUP', 'Support', 2, ?)`, []any{now}},
		{`INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter, created_at, updated_at)
			VALUES (?, 'acme', 'support', 1, 'SUP-1', 't', '', 'high', 'open', '[]', 'r', ?, ?)`, []any{ticketID, now, now}},
		{comment, []any{uuid.NewString(), ticketID, 1, opID, now}},
		{comment, []any{uuid.NewString(), ticketID, 2, opID, now.Add(time.Second)}},
		{event, []any{uuid.NewString(), ticketID, 3, opID, now}},
		{event, []any{uuid.NewString(), ticketID, 4, opID, now.Add(time.Second)}},
	} {
		if err := d.Gorm.Exec(stmt.sql, stmt.args...).Error; err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Up(ctx, sqlDB, "sqlite"); err != nil {
		t.Fatalf("upgrade over earlier reapplications: %v", err)
	}
	for _, table := range []string{"comments", "ticket_events"} {
		var seqs []int64
		if err := d.Gorm.Raw("SELECT seq FROM " + table + " WHERE reapplied_after_prune = 1").Scan(&seqs).Error; err != nil {
			t.Fatal(err)
		}
		if want := map[string]int64{"comments": 2, "ticket_events": 4}[table]; len(seqs) != 1 || seqs[0] != want {
			t.Errorf("%s marked reapplied: seqs %v, want only the later row's %d", table, seqs, want)
		}
	}
	if err := d.Gorm.Exec(comment, uuid.NewString(), ticketID, 5, opID, now).Error; err == nil {
		t.Error("a third comment under the same operation ID was accepted")
	}
	if err := d.Gorm.Exec(event, uuid.NewString(), ticketID, 6, opID, now).Error; err == nil {
		t.Error("a third update event under the same operation ID was accepted")
	}
}

// sqliteAt opens a new SQLite database migrated only up to version, the
// state an existing deployment upgrades from.
func sqliteAt(t *testing.T, version int64) (*db.DB, *sql.DB) {
	t.Helper()
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
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	return d, sqlDB
}
