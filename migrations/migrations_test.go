package migrations_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/migrations"
)

// TestDialectsEnforceTheSameKeys runs one table of rows against both schemas:
// each dialect must accept the same rows and reject the same ones.
func TestDialectsEnforceTheSameKeys(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		now := time.Now().UTC()
		project := `INSERT INTO projects (tenant_id, id, key, name, created_at) VALUES (?, ?, ?, ?, ?)`
		ticket := `INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, 't', '', ?, 'open', '[]', 'r', ?, ?)`
		operation := `INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)`
		versioned := `INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status, labels, reporter, created_at, updated_at, version, assignee)
			VALUES (?, 'acme', 'support', ?, ?, 't', '', 'normal', 'open', '[]', 'r', ?, ?, ?, ?)`
		comment := `INSERT INTO comments (id, tenant_id, ticket_id, seq, author, body, operation_id, created_at) VALUES (?, 'acme', ?, ?, 'r', ?, ?, ?)`
		event := `INSERT INTO ticket_events (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes, created_at)
			VALUES (?, 'acme', ?, ?, ?, ?, 'r', ?, ?, '{}', ?)`
		fp := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		opID := uuid.NewString()
		ticketID, commentID := uuid.NewString(), uuid.NewString()
		steps := []struct {
			name string
			sql  string
			args []any
			ok   bool
		}{
			{"Project", project, []any{"acme", "support", "SUP", "Support", now}, true},
			{"SameProjectOtherTenant", project, []any{"globex", "support", "SUP", "Support", now}, true},
			{"DuplicateProjectID", project, []any{"acme", "support", "HELP", "Help", now}, false},
			{"DuplicateProjectKey", project, []any{"acme", "help", "SUP", "Help", now}, false},
			{"Ticket", ticket, []any{uuid.NewString(), "acme", "support", 1, "SUP-1", "normal", now, now}, true},
			{"TicketNumberReused", ticket, []any{uuid.NewString(), "acme", "support", 1, "SUP-9", "normal", now, now}, false},
			{"TicketKeyReused", ticket, []any{uuid.NewString(), "acme", "support", 2, "SUP-1", "normal", now, now}, false},
			{"TicketUnknownProject", ticket, []any{uuid.NewString(), "acme", "sales", 1, "SAL-1", "normal", now, now}, false},
			{"TicketOtherTenantsProject", ticket, []any{uuid.NewString(), "initech", "support", 1, "SUP-1", "normal", now, now}, false},
			{"TicketBadPriority", ticket, []any{uuid.NewString(), "acme", "support", 3, "SUP-3", "asap", now, now}, false},
			{"Operation", operation, []any{"acme", "create_ticket", opID, fp, "succeeded", now, now}, true},
			{"OperationSameKey", operation, []any{"acme", "create_ticket", opID, fp, "succeeded", now, now}, false},
			{"OperationOtherTenant", operation, []any{"globex", "create_ticket", opID, fp, "succeeded", now, now}, true},
			{"OperationOtherAction", operation, []any{"acme", "close_ticket", opID, fp, "succeeded", now, now}, true},
			{"OperationBadStatus", operation, []any{"acme", "create_ticket", uuid.NewString(), fp, "done", now, now}, false},
			{"OperationShortFingerprint", operation, []any{"acme", "create_ticket", uuid.NewString(), "abc", "pending", now, now}, false},
			{"TicketVersioned", versioned, []any{ticketID, 10, "SUP-10", now, now, 3, "alice"}, true},
			{"TicketVersionZero", versioned, []any{uuid.NewString(), 11, "SUP-11", now, now, 0, nil}, false},
			{"TicketBlankAssignee", versioned, []any{uuid.NewString(), 12, "SUP-12", now, now, 1, ""}, false},
			{"Comment", comment, []any{commentID, ticketID, 1, "hello", opID, now}, true},
			{"CommentSeqReused", comment, []any{uuid.NewString(), ticketID, 1, "again", opID, now}, false},
			{"CommentEmptyBody", comment, []any{uuid.NewString(), ticketID, 2, "", opID, now}, false},
			{"CommentUnknownTicket", comment, []any{uuid.NewString(), uuid.NewString(), 1, "hello", opID, now}, false},
			{"EventCreated", event, []any{uuid.NewString(), ticketID, 2, 1, "created", opID, nil, now}, true},
			{"EventCommented", event, []any{uuid.NewString(), ticketID, 3, 1, "commented", opID, commentID, now}, true},
			{"EventSeqReused", event, []any{uuid.NewString(), ticketID, 3, 2, "updated", opID, nil, now}, false},
			{"EventBadKind", event, []any{uuid.NewString(), ticketID, 4, 2, "deleted", opID, nil, now}, false},
			{"EventCommentedWithoutComment", event, []any{uuid.NewString(), ticketID, 4, 1, "commented", opID, nil, now}, false},
			{"EventUpdatedWithComment", event, []any{uuid.NewString(), ticketID, 4, 2, "updated", opID, commentID, now}, false},
			{"EventUnknownComment", event, []any{uuid.NewString(), ticketID, 4, 1, "commented", opID, uuid.NewString(), now}, false},
			{"EventUnknownTicket", event, []any{uuid.NewString(), uuid.NewString(), 1, 1, "created", opID, nil, now}, false},
			{"EventVersionZero", event, []any{uuid.NewString(), ticketID, 4, 0, "updated", opID, nil, now}, false},
			// One row per operation (00005): a retry after its record was
			// pruned cannot be applied a second time.
			{"CommentOperationReused", comment, []any{uuid.NewString(), ticketID, 10, "again", opID, now}, false},
			{"EventUpdated", event, []any{uuid.NewString(), ticketID, 11, 2, "updated", opID, nil, now}, true},
			{"EventUpdatedOperationReused", event, []any{uuid.NewString(), ticketID, 12, 3, "updated", opID, nil, now}, false},
			{"EventCreatedOperationReused", event, []any{uuid.NewString(), ticketID, 12, 3, "created", opID, nil, now}, false},
		}
		for _, s := range steps {
			err := d.Gorm.Exec(s.sql, s.args...).Error
			if (err == nil) != s.ok {
				t.Errorf("%s: err = %v, want accepted=%v", s.name, err, s.ok)
			}
		}
	})
}

func TestUpIsIdempotent(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		v1, err := migrations.Up(context.Background(), sqlDB, string(d.Dialect))
		if err != nil {
			t.Fatal(err)
		}
		v2, err := migrations.Up(context.Background(), sqlDB, string(d.Dialect))
		if err != nil || v2 != v1 || v1 < 1 {
			t.Errorf("versions %d then %d (%v); want the same positive version", v1, v2, err)
		}
	})
}

func TestUpRejectsUnknownDialect(t *testing.T) {
	t.Parallel()
	if _, err := migrations.Up(context.Background(), nil, "mysql"); err == nil {
		t.Error("Up accepted an unknown dialect")
	}
}

// TestEveryMigrationRollsBackAndReapplies rolls each dialect's schema back
// to nothing and forward again: every migration has a Down section that
// undoes its Up, so an operator can step back past any release and re-apply
// it, and the schema afterwards is the one a fresh database gets.
func TestEveryMigrationRollsBackAndReapplies(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		latest, err := migrations.Up(ctx, sqlDB, string(d.Dialect))
		if err != nil {
			t.Fatal(err)
		}
		fresh := schemaOf(t, d)
		if err := migrations.DownTo(ctx, sqlDB, string(d.Dialect), 0); err != nil {
			t.Fatalf("down to 0: %v", err)
		}
		if left := schemaOf(t, d); len(left) != 0 {
			t.Errorf("after rolling everything back, the schema still holds %q", left)
		}
		again, err := migrations.Up(ctx, sqlDB, string(d.Dialect))
		if err != nil || again != latest {
			t.Fatalf("up again = %d, %v; want %d", again, err, latest)
		}
		if reapplied := schemaOf(t, d); !slices.Equal(reapplied, fresh) {
			t.Errorf("schema after down and up differs from a fresh one:\nfresh     %q\nreapplied %q", fresh, reapplied)
		}
	})
}

// schemaOf lists the objects ticketd's migrations own (goose's own table
// left out): tables, columns, indexes, triggers and sequences, sorted.
func schemaOf(t *testing.T, d *db.DB) []string {
	t.Helper()
	q := `SELECT type || ' ' || name || ' ' || coalesce(sql, '') FROM sqlite_master
		WHERE name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite_%' ORDER BY 1`
	if d.Dialect == db.Postgres {
		q = `SELECT 'column ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '')
			FROM information_schema.columns WHERE table_schema = current_schema() AND table_name NOT LIKE 'goose%'
			UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = current_schema() AND tablename NOT LIKE 'goose%'
			UNION ALL SELECT 'trigger ' || event_object_table || '.' || trigger_name || ' ' || event_manipulation
			FROM information_schema.triggers WHERE trigger_schema = current_schema()
			UNION ALL SELECT 'sequence ' || sequence_name FROM information_schema.sequences
			WHERE sequence_schema = current_schema() AND sequence_name NOT LIKE 'goose%'
			ORDER BY 1`
	}
	var objects []string
	if err := d.Gorm.Raw(q).Scan(&objects).Error; err != nil {
		t.Fatal(err)
	}
	return objects
}
