package approval_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
)

// TestConsumeRefusesAnApprovalThatExpiredBeforeTheWrite: the gate lets a
// write through with an approval in force, then TICKETD_APPROVAL_TTL passes
// before the write's transaction runs (a slow claim, a stalled retry); the
// consume step in that transaction refuses it, so the write rolls back
// instead of running on a spent yes.
func TestConsumeRefusesAnApprovalThatExpiredBeforeTheWrite(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		start := time.Now()
		var clock atomic.Int64
		clock.Store(start.UnixNano())
		gate := approval.New(d.Gorm, approval.Options{Policy: approval.Policy{Enabled: true},
			Now: func() time.Time { return time.Unix(0, clock.Load()) }})
		target := approval.Target{Key: operations.Key{Tenant: "acme", Action: "create_ticket", OperationID: uuid.New()},
			Fingerprint: "fp", Subject: "agent"}
		urgent := approval.Proposal{Summary: "Create an urgent ticket.", Urgent: true}

		_, err := gate.Check(ctx, target, urgent)
		var ask *approval.RequiredError
		if !errors.As(err, &ask) {
			t.Fatalf("first check = %v; want approval required", err)
		}
		if _, err := gate.Decide(ctx, "acme", "carol", ask.Approval.ID, true, approval.ViaREST); err != nil {
			t.Fatal(err)
		}
		consume, err := gate.Check(ctx, target, urgent)
		if err != nil || consume == nil {
			t.Fatalf("check after approval = %v; want the consume step", err)
		}
		clock.Store(start.Add(approval.DefaultTTL + time.Second).UnixNano())
		err = d.Gorm.Transaction(func(tx *gorm.DB) error { return consume(tx) })
		if !errors.Is(err, approval.ErrRequired) {
			t.Fatalf("consume past the TTL = %v; want approval required", err)
		}
		var status string
		if err := d.Gorm.Table("approvals").Where("tenant_id = ? AND approval_id = ?", "acme", ask.Approval.ID).
			Pluck("status", &status).Error; err != nil || status != string(approval.StatusApproved) {
			t.Fatalf("approval status %q (%v) after the refused consume; want it left approved, not used", status, err)
		}
	})
}

// TestPolicyCountsOnlyTicketsThatChange: a bulk asks when it changes at
// least the threshold's tickets; tickets it would leave as they are count
// for nothing.
func TestPolicyCountsOnlyTicketsThatChange(t *testing.T) {
	t.Parallel()
	policy := approval.Policy{Enabled: true, BulkThreshold: 3}
	items := func(changing, unchanged int) []approval.Item {
		var out []approval.Item
		for range changing {
			out = append(out, approval.Item{Ticket: "SUP-1", Changes: []approval.FieldChange{{Field: "status", From: "open", To: "closed"}}})
		}
		for range unchanged {
			out = append(out, approval.Item{Ticket: "SUP-2"})
		}
		return out
	}
	for _, c := range []struct {
		changing, unchanged int
		want                bool
	}{{3, 0, true}, {2, 5, false}, {0, 10, false}, {3, 7, true}} {
		if got := policy.Needs(approval.Proposal{Bulk: true, Items: items(c.changing, c.unchanged)}); got != c.want {
			t.Errorf("a bulk changing %d of %d tickets: needs %v, want %v", c.changing, c.changing+c.unchanged, got, c.want)
		}
	}
}
