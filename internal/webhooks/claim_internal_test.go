package webhooks

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestOneClaimPerAttempt: workers that claim the same pending delivery at
// once (a rescued job beside its original) get one attempt between them;
// the others are told how long the lease has left, and one attempt row is
// written. On PostgreSQL the claim is one statement, on SQLite a
// transaction; both must hold this.
func TestOneClaimPerAttempt(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if err := Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		s, err := New(d, Options{AllowPrivate: true})
		if err != nil {
			t.Fatal(err)
		}
		sub, _, err := s.CreateSubscription(ctx, "acme", NewSubscription{URL: "http://127.0.0.1:9/", Events: EventTypes})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		row := deliveryRow{TenantID: "acme", ID: uuid.Must(uuid.NewV7()), SubscriptionID: sub.ID, WebhookID: uuid.Must(uuid.NewV7()),
			EventType: EventTypes[0], Payload: `{}`, Status: StatusPending, CreatedAt: now, UpdatedAt: now}
		if err := d.Gorm.Create(&row).Error; err != nil {
			t.Fatal(err)
		}
		const workers = 8
		claims := make(chan *claimed, workers)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				c, err := s.claim(ctx, deliveryArgs{Tenant: "acme", DeliveryID: row.ID, SubscriptionID: sub.ID})
				if err != nil {
					t.Error(err)
				}
				claims <- c
			})
		}
		wg.Wait()
		close(claims)
		sent, leased := 0, 0
		for c := range claims {
			switch {
			case c != nil && c.leasedFor == 0 && c.attempt == 1 && c.url == sub.URL:
				sent++
			case c != nil && c.leasedFor > 0:
				leased++
			default:
				t.Errorf("claim = %+v, want an attempt or a lease to wait for", c)
			}
		}
		var attempts int64
		if err := d.Gorm.Model(&attemptRow{}).Where("tenant_id = ? AND delivery_id = ?", "acme", row.ID).Count(&attempts).Error; err != nil {
			t.Fatal(err)
		}
		if sent != 1 || leased != workers-1 || attempts != 1 {
			t.Errorf("%d claimed, %d told to wait, %d attempt rows; want 1, %d, 1", sent, leased, attempts, workers-1)
		}
	})
}
