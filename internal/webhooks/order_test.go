package webhooks_test

import (
	"context"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// TestNewDeliveryGoesAheadOfADueBacklog gives tenant acme a subscription
// whose receiver hangs (a subscription share of 1 of 4 workers) and 30
// deliveries put back for being over that share; then, in one transaction,
// makes that whole backlog due, as River's scheduler does every 5s for the
// jobs whose wait has run out, and queues one delivery for tenant globex.
// Globex's must be the first job handed out after that commit: not one of
// acme's due jobs may be fetched before it. Queued at its insert, it stood
// behind all 30, each fetched and put back again first.
func TestNewDeliveryGoesAheadOfADueBacklog(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, testNewDeliveryGoesAheadOfADueBacklog)
}

func testNewDeliveryGoesAheadOfADueBacklog(t *testing.T, d *db.DB) {
	h := newHanging(0)
	slow := newServer(t, h)
	fast := newRecorder(t)
	opts := fastOptions()
	opts.Concurrency = 4
	opts.TenantShare, opts.SubscriptionShare = 2, 1
	opts.AttemptTimeout = time.Minute // the backlog waits about this long: longer than the test
	svc := newService(t, d, opts, true)
	t.Cleanup(func() { close(h.release) })
	subscribe(t, svc, slow.URL+"/a")
	if _, _, err := svc.CreateSubscription(context.Background(), "globex", webhooks.NewSubscription{
		URL: fast.srv.URL + "/hooks", Events: webhooks.EventTypes,
	}); err != nil {
		t.Fatal(err)
	}
	const backlog = 30
	for range backlog + 1 {
		enqueue(t, d, svc, newEvent(webhooks.TypeTicketCreated), true)
	}
	tenantOf, dueNow := tenantOfIn("river_job", d), "now() - interval '1 second'"
	if d.Dialect == db.SQLite {
		dueNow = "datetime('now', 'subsec', '-1 second')"
	}
	waitFor(t, "acme's backlog put back behind its one hanging attempt", func() bool {
		var n int64
		err := d.Gorm.Raw(`SELECT count(*) FROM river_job WHERE state = 'scheduled' AND ` + tenantOf + ` = 'acme'`).Scan(&n).Error
		return err == nil && n == backlog
	})

	var put []int64 // not the one attempt in flight, whose job was handed out before
	if err := d.Gorm.Raw(`SELECT id FROM river_job WHERE state = 'scheduled' AND ` + tenantOf + ` = 'acme'`).Scan(&put).Error; err != nil {
		t.Fatal(err)
	}
	ev := newEvent(webhooks.TypeTicketCreated)
	ev.Tenant = "globex"
	err := d.Gorm.Transaction(func(tx *gorm.DB) error {
		err := tx.Exec(`UPDATE river_job SET state = 'available', scheduled_at = `+dueNow+`, attempted_at = NULL
			WHERE id IN ?`, put).Error
		if err != nil {
			return err
		}
		return svc.Enqueue(tx, ev)
	})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "globex's delivery", func() bool {
		ds, err := svc.DeliveriesFor(context.Background(), "globex", ev.OperationID)
		return err == nil && len(ds) == 1 && ds[0].Status == webhooks.StatusDelivered
	})
	var ahead int64
	err = d.Gorm.Raw(`SELECT count(*) FROM river_job a, river_job b
		WHERE a.id IN ? AND b.kind = 'webhook_delivery' AND `+tenantOfIn("b", d)+` = 'globex'
			AND a.attempted_at IS NOT NULL AND a.attempted_at < b.attempted_at`, put).Scan(&ahead).Error
	if err != nil {
		t.Fatal(err)
	}
	if ahead != 0 {
		t.Errorf("%d of acme's %d due put-back jobs were handed out before globex's new delivery, want none", ahead, backlog)
	}
}

// tenantOfIn is the SQL for the tenant in the job args of river_job alias
// table on d's dialect.
func tenantOfIn(table string, d *db.DB) string {
	if d.Dialect == db.SQLite {
		return "json_extract(" + table + ".args, '$.tenant')"
	}
	return table + ".args->>'tenant'"
}
