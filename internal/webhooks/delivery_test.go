package webhooks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestRolledBackWriteEnqueuesNothingCommittedIsDeliveredOnce(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		rec := newRecorder(t)
		svc := newService(t, d, fastOptions(), true)
		_, secret := subscribe(t, svc, rec.srv.URL+"/hooks")
		ref := rec.verifyWith(secret)

		rolledBack := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, svc, rolledBack, false)
		if jobs := dbtest.CountRows(t, d, "river_job", ""); jobs != 0 {
			t.Fatalf("river jobs after rollback: %d, want 0", jobs)
		}
		if ds, err := svc.DeliveriesFor(context.Background(), tenant, rolledBack.OperationID); err != nil || len(ds) != 0 {
			t.Fatalf("deliveries after rollback: %+v, %v", ds, err)
		}

		committed := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, svc, committed, true)
		got := waitStatus(t, svc, committed.OperationID, webhooks.StatusDelivered)
		if got.Attempts != 1 || got.LastError != "" || got.WebhookID != committed.ID {
			t.Errorf("delivery = %+v, want 1 attempt, no error, webhook-id %s", got, committed.ID)
		}
		seen := rec.seen()
		if len(seen) != 1 || seen[0].webhookID != committed.ID.String() {
			t.Fatalf("receiver saw %+v, want one request for %s", seen, committed.ID)
		}
		acted, dups, err := ref.Stats()
		if err != nil || acted != 1 || dups != 0 {
			t.Errorf("reference receiver acted %d, duplicates %d, err %v; want 1, 0", acted, dups, err)
		}
	})
}

func TestEnqueueRefusesWithoutTransactionOrBadEvent(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc := newService(t, d, fastOptions(), false)
	if err := svc.Enqueue(d.Gorm, newEvent(webhooks.TypeTicketCreated)); !errors.Is(err, webhooks.ErrNoTransaction) {
		t.Errorf("outside a transaction: %v, want ErrNoTransaction", err)
	}
	bad := newEvent("ticket.deleted")
	err := d.Gorm.Transaction(func(tx *gorm.DB) error { return svc.Enqueue(tx, bad) })
	if !errors.Is(err, webhooks.ErrInvalid) {
		t.Errorf("unknown type: %v, want ErrInvalid", err)
	}
}

// TestResponseHeadersAreBounded answers a delivery with 1 MiB of headers:
// ticketd stops reading at 64 KiB and records the attempt as not delivered,
// instead of holding whatever a receiver sends.
func TestResponseHeadersAreBounded(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	huge := strings.Repeat("x", 8<<10)
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := range 128 {
			w.Header().Set(fmt.Sprintf("X-Pad-%d", i), huge)
		}
		w.WriteHeader(http.StatusOK)
	}))
	opts := fastOptions()
	opts.MaxAttempts = 1
	svc := newService(t, d, opts, true)
	subscribe(t, svc, srv.URL+"/hooks")
	ev := newEvent(webhooks.TypeTicketCreated)
	enqueue(t, d, svc, ev, true)
	got := waitStatus(t, svc, ev.OperationID, webhooks.StatusFailed)
	if !strings.Contains(got.LastError, "exceeded") {
		t.Errorf("delivery answered with 1 MiB of headers = %+v, want failed on the header bound", got)
	}
}
