package webhooks

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestRescuedDeliveryKeepsItsPlace: a delivery rescued from a replica
// that died mid-attempt goes back into the queue where it stood when it
// ran, ahead of the deliveries queued after it, not behind its
// subscription's backlog: the queue is taken in scheduled order.
func TestRescuedDeliveryKeepsItsPlace(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
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
	enqueue := func() {
		t.Helper()
		ticket := uuid.Must(uuid.NewV7())
		ev := Event{ID: uuid.Must(uuid.NewV7()), Tenant: "acme", Type: EventTypes[0], OperationID: uuid.Must(uuid.NewV7()),
			TicketID: ticket, OccurredAt: time.Now().UTC(), Data: json.RawMessage(`{"ticket":{"id":"` + ticket.String() + `"}}`)}
		if err := d.Gorm.Transaction(func(tx *gorm.DB) error { return s.Enqueue(tx, ev) }); err != nil {
			t.Fatal(err)
		}
	}
	enqueue()
	var stuck int64
	err = d.Gorm.Raw(`UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour',
		attempted_by = ARRAY['dead-replica'] RETURNING id`).Scan(&stuck).Error
	if err != nil || stuck == 0 {
		t.Fatalf("leave the first delivery's job running on a dead replica: %v (job %d)", err, stuck)
	}
	for range 5 {
		enqueue() // the subscription's backlog, queued after it
	}
	if n, err := s.rescue.sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep rescued %d (%v), want 1", n, err)
	}
	var first int64
	err = d.Gorm.Raw(`SELECT id FROM river_job WHERE state IN ('available', 'retryable') AND args->>'subscription_id' = ?
		ORDER BY priority, scheduled_at, id LIMIT 1`, sub.ID.String()).Scan(&first).Error
	if err != nil {
		t.Fatal(err)
	}
	if first != stuck {
		t.Errorf("the queue's next delivery job is %d, want the rescued one, %d, ahead of the 5 queued after it", first, stuck)
	}
	// Put back for its subscription's share, it takes the first turn (shares.take).
	row, err := s.client.JobGet(ctx, stuck)
	if err != nil {
		t.Fatal(err)
	}
	if !rescued(&river.Job[deliveryArgs]{JobRow: row}) {
		t.Errorf("the rescued job's errors %+v do not mark it rescued", row.Errors)
	}
}
