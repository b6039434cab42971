package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/migrations"
)

// TestTicketNumbersMigrationContinuesExistingProjects upgrades a PostgreSQL
// database as milestone 2 left it (numbers in projects.next_number) to the
// per-project sequences of 00004: an existing project's next ticket
// continues its numbering, a project created afterwards starts at 1, and
// rolling the migration back puts each project's next number back into
// next_number.
func TestTicketNumbersMigrationContinuesExistingProjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := dbtest.Postgres(t)
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	// The test's schema, emptied and rebuilt to version 3: the pool's
	// connections find it again by name (search_path).
	if err := d.Gorm.Exec(`DO $$ BEGIN EXECUTE format('DROP SCHEMA %I CASCADE; CREATE SCHEMA %I', current_schema(), current_schema()); END $$`).Error; err != nil {
		t.Fatal(err)
	}
	if err := migrations.UpTo(ctx, sqlDB, "postgres", 3); err != nil {
		t.Fatalf("up to 3: %v", err)
	}
	now := time.Now().UTC()
	if err := d.Gorm.Exec(`INSERT INTO projects (tenant_id, id, key, name, next_number, created_at) VALUES ('acme', 'support', 'SUP', 'Support', 5, ?)`, now).Error; err != nil {
		t.Fatal(err)
	}
	if err := d.Gorm.Exec(`INSERT INTO tickets (id, tenant_id, project_id, number, key, title, priority, status, reporter, created_at, updated_at)
		VALUES (?, 'acme', 'support', 4, 'SUP-4', 'old', 'normal', 'open', 'alice', ?, ?)`, uuid.NewString(), now, now).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Up(ctx, sqlDB, "postgres"); err != nil {
		t.Fatalf("up: %v", err)
	}
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	old, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: "acme", Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "after the upgrade"})
	if err != nil || old.Ticket.Key != "SUP-5" {
		t.Fatalf("create in the existing project = %+v, %v; want SUP-5", old.Ticket, err)
	}
	if _, err := svc.CreateProject(ctx, "acme", tickets.Project{ID: "ops", Key: "OPS", Name: "Operations"}); err != nil {
		t.Fatal(err)
	}
	fresh, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: "acme", Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "ops", Title: "first"})
	if err != nil || fresh.Ticket.Key != "OPS-1" {
		t.Fatalf("create in a new project = %+v, %v; want OPS-1", fresh.Ticket, err)
	}
	sequences := func() int64 {
		var n int64
		if err := d.Gorm.Raw(`SELECT count(*) FROM pg_class WHERE relkind = 'S' AND relname LIKE 'ticket\_numbers\_%'
			AND relnamespace = current_schema()::regnamespace`).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := sequences(); n != 2 {
		t.Errorf("%d ticket number sequences, want one per project (2)", n)
	}
	if err := migrations.DownTo(ctx, sqlDB, "postgres", 3); err != nil {
		t.Fatalf("down to 3: %v", err)
	}
	var next []int64
	if err := d.Gorm.Raw(`SELECT next_number FROM projects WHERE tenant_id = 'acme' ORDER BY id`).Scan(&next).Error; err != nil {
		t.Fatal(err)
	}
	if len(next) != 2 || next[0] != 2 || next[1] != 6 {
		t.Errorf("next_number after the rollback = %v, want [2 6] (ops, support)", next)
	}
	if n := sequences(); n != 0 {
		t.Errorf("%d ticket number sequences left after the rollback, want 0", n)
	}
}
