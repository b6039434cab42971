package webhooks_test

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// TestDeadReplicasDeliveryIsRescuedInSeconds leaves a delivery as a replica
// killed mid-attempt leaves it: its job running, attempted by a worker that
// will never finish, its attempt leased and recorded as unknown. A live
// replica must send it again about RescueAfter later (3s here), not after
// River's own rescuer's 30s round, and the receiver gets it once.
func TestDeadReplicasDeliveryIsRescuedInSeconds(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	rec := newRecorder(t)
	opts := fastOptions()
	opts.AttemptTimeout = time.Second
	opts.RescueAfter = 3 * time.Second
	live := newService(t, d, opts, true)
	_, secret := subscribe(t, live, rec.srv.URL+"/hooks")
	ref := rec.verifyWith(secret)
	// Started well before the dead replica's attempt, so River's rescuer
	// has had its first round and would not come back for 30s.
	time.Sleep(time.Second)

	ev := newEvent(webhooks.TypeTicketCreated)
	err := d.Gorm.Transaction(func(tx *gorm.DB) error {
		if err := live.Enqueue(tx, ev); err != nil {
			return err
		}
		for _, stmt := range []string{
			`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['dead-replica']`,
			`UPDATE webhook_deliveries SET attempts = 1, leased_until = now() + interval '3 seconds'`,
			`INSERT INTO webhook_attempts (tenant_id, delivery_id, attempt, outcome, latency_ms, started_at)
				SELECT tenant_id, id, 1, 'unknown', 0, now() FROM webhook_deliveries`,
		} {
			if err := tx.Exec(stmt).Error; err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got webhooks.DeliveryStatus
	waitUpTo(t, 15*time.Second, "the dead replica's delivery rescued and delivered", func() bool {
		got = deliveryOf(t, live, ev.OperationID)
		return got.Status == webhooks.StatusDelivered
	})
	if got.Attempts != 2 {
		t.Errorf("delivery = %+v, want delivered on attempt 2 (attempt 1 was the dead replica's)", got)
	}
	if acted, dups, err := ref.Stats(); err != nil || acted != 1 || dups != 0 {
		t.Errorf("reference receiver acted %d, duplicates %d (%v); want 1, 0", acted, dups, err)
	}
}
