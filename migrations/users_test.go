package migrations_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/migrations"
)

// TestUsersMigrationAddsStoredAssignees upgrades a database from before the
// tenant directory (00014) that holds an assigned ticket: its assignee
// becomes an active user of the ticket's tenant only, so updating the
// ticket with the same assignee still passes the check.
func TestUsersMigrationAddsStoredAssignees(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		if err := migrations.DownTo(ctx, sqlDB, string(d.Dialect), 13); err != nil {
			t.Fatalf("down to 13: %v", err)
		}
		now := time.Now().UTC()
		ticketID := uuid.NewString()
		for _, stmt := range []struct {
			sql  string
			args []any
		}{
			{`INSERT INTO projects (tenant_id, id, key, name, created_at) VALUES ('acme', 'support', 'SUP', 'Support', ?)`, []any{now}},
			{`INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter, created_at, updated_at, version, assignee)
				VALUES (?, 'acme', 'support', 1, 'SUP-1', 'old', '', 'normal', 'open', '[]', 'alice', ?, ?, 1, 'zoe')`, []any{ticketID, now, now}},
			{`INSERT INTO ticket_events (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
				VALUES (?, 'acme', ?, 1, 1, 'created', 'alice', ?, '{}', ?)`, []any{uuid.NewString(), ticketID, uuid.NewString(), now}},
		} {
			if err := d.Gorm.Exec(stmt.sql, stmt.args...).Error; err != nil {
				t.Fatal(err)
			}
		}
		if _, err := migrations.Up(ctx, sqlDB, string(d.Dialect)); err != nil {
			t.Fatalf("up: %v", err)
		}
		svc := tickets.NewService(d.Gorm, tickets.Options{})
		users, err := svc.People().List(ctx, "acme", "")
		if err != nil || len(users) != 1 || users[0].ID != "zoe" || !users[0].Active {
			t.Fatalf("users after the upgrade = %+v, %v; want zoe, active", users, err)
		}
		if other, err := svc.People().List(ctx, "globex", ""); err != nil || len(other) != 0 {
			t.Errorf("another tenant's users = %+v, %v; want none", other, err)
		}
		zoe := "zoe"
		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: "acme", Subject: "alice"}, ticketstest.OpID(uuid.NewString()), "SUP-1",
			tickets.TicketUpdate{Assignee: &zoe, Title: &zoe}); err != nil {
			t.Errorf("update keeping the stored assignee: %v", err)
		}
	})
}
