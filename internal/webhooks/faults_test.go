package webhooks_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestDroppedAnswerIsUnknownAndTheRetryIsDeduplicatedByTheReceiver(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		rec := newRecorder(t)
		proxy := faultproxy.Start(t, rec.srv.Listener.Addr().String())
		svc := newService(t, d, fastOptions(), true)
		sub, secret := subscribe(t, svc, "http://"+proxy.Addr()+"/hooks")
		ref := rec.verifyWith(secret)

		ev := newEvent(webhooks.TypeTicketCreated)
		// The operation ID closes the body: the proxy forwards the whole
		// request, lets the receiver answer, and cuts before the answer.
		fired := proxy.DropReplyAfter(ev.OperationID.String())
		enqueue(t, d, svc, ev, true)
		select {
		case <-fired:
		case <-time.After(20 * time.Second):
			t.Fatal("the fault never fired")
		}
		got := waitStatus(t, svc, ev.OperationID, webhooks.StatusDelivered)
		if got.Attempts != 2 {
			t.Errorf("attempts = %d, want 2", got.Attempts)
		}
		ds, err := svc.Deliveries(context.Background(), tenant, sub.ID, 0)
		if err != nil || len(ds) != 1 || len(ds[0].Attempts) != 2 {
			t.Fatalf("deliveries = %+v, %v", ds, err)
		}
		if a := ds[0].Attempts[0]; a.Outcome != webhooks.OutcomeUnknown || a.StatusCode != 0 {
			t.Errorf("first attempt = %+v, want unknown: sent, answer lost", a)
		}
		if a := ds[0].Attempts[1]; a.Outcome != webhooks.OutcomeDelivered || a.StatusCode != http.StatusOK {
			t.Errorf("second attempt = %+v, want delivered with the receiver's 200 for a duplicate", a)
		}
		for _, r := range rec.seen() {
			if r.webhookID != ev.ID.String() {
				t.Errorf("retry carried webhook-id %s, want %s", r.webhookID, ev.ID)
			}
		}
		acted, dups, err := ref.Stats()
		if err != nil || acted != 1 || dups != 1 {
			t.Errorf("reference receiver acted %d, duplicates %d (%v); want acted once, one duplicate stopped", acted, dups, err)
		}
	})
}

// concurrency tracks, per webhook-id, how many requests are in flight.
type concurrency struct {
	mu      sync.Mutex
	now     map[string]int
	overlap []string
}

func (c *concurrency) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		c.mu.Lock()
		c.now[id]++
		if c.now[id] > 1 {
			c.overlap = append(c.overlap, id)
		}
		c.mu.Unlock()
		time.Sleep(5 * time.Millisecond) // widen the window an overlap would need
		next.ServeHTTP(w, r)
		c.mu.Lock()
		c.now[id]--
		c.mu.Unlock()
	})
}

func TestTwoReplicasDeliverEveryEventNeverTheSameAttemptAtOnce(t *testing.T) {
	t.Parallel()
	const events = 40
	url := dbtest.PostgresURL(t)
	rec := newRecorder(t)
	conc := &concurrency{now: map[string]int{}}
	srv := newServer(t, conc.wrap(rec))

	var replicas []*webhooks.Service
	var dbs []*db.DB
	for i := range 2 {
		d, err := db.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		opts := fastOptions()
		opts.WorkerID = fmt.Sprintf("replica-%d", i)
		opts.Concurrency = 4
		replicas = append(replicas, newService(t, d, opts, true))
		dbs = append(dbs, d)
	}
	sub, secret := subscribe(t, replicas[0], srv.URL)
	ref := rec.verifyWith(secret)

	ops := make([]uuid.UUID, events)
	for i := range events {
		ev := newEvent(webhooks.TypeTicketCreated)
		ops[i] = ev.OperationID
		enqueue(t, dbs[i%2], replicas[i%2], ev, true)
	}
	waitFor(t, "every event delivered", func() bool {
		ds, err := replicas[0].Deliveries(context.Background(), tenant, sub.ID, events)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Status != webhooks.StatusDelivered {
				return false
			}
		}
		return len(ds) == events
	})
	acted, dups, err := ref.Stats()
	if err != nil || acted != events {
		t.Errorf("reference receiver acted on %d events (%v), want %d", acted, err, events)
	}
	conc.mu.Lock()
	defer conc.mu.Unlock()
	if len(conc.overlap) > 0 {
		t.Errorf("webhook-ids sent twice at once: %v", conc.overlap)
	}
	var split []struct {
		Worker string
		Jobs   int
	}
	err = dbs[0].Gorm.Raw("SELECT w AS worker, count(*) AS jobs FROM river_job, unnest(attempted_by) AS w GROUP BY w ORDER BY w").Scan(&split).Error
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events, %d requests, %d duplicates stopped by the receiver; attempts per replica %+v", events, len(rec.seen()), dups, split)
}

func TestEventCommittedWhileNoWorkerRunsIsDeliveredWhenOneStarts(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		rec := newRecorder(t)
		down := newService(t, d, fastOptions(), false) // the replica that committed, then died
		_, secret := subscribe(t, down, rec.srv.URL)
		ref := rec.verifyWith(secret)
		ev := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, down, ev, true)
		if got := deliveryOf(t, down, ev.OperationID); got.Status != webhooks.StatusPending || got.Attempts != 0 {
			t.Fatalf("before any worker: %+v, want pending, no attempt", got)
		}

		up := newService(t, d, fastOptions(), true)
		waitStatus(t, up, ev.OperationID, webhooks.StatusDelivered)
		if acted, dups, err := ref.Stats(); err != nil || acted != 1 || dups != 0 {
			t.Errorf("reference receiver acted %d, duplicates %d (%v); want 1, 0", acted, dups, err)
		}
	})
}

func TestDatabaseConnectionsCutMidDeliveryLoseNothing(t *testing.T) {
	t.Parallel()
	const events = 10
	d, proxy := dbtest.PostgresViaProxy(t)
	rec := newRecorder(t)
	opts := fastOptions()
	opts.RescueAfter = opts.AttemptTimeout + 3*time.Second
	svc := newService(t, d, opts, true)
	sub, secret := subscribe(t, svc, rec.srv.URL)
	ref := rec.verifyWith(secret)
	for range events {
		enqueue(t, d, svc, newEvent(webhooks.TypeTicketCreated), true)
	}
	// Cut every database connection a few times while deliveries run: the
	// workers' claims, records and River's own bookkeeping all lose theirs.
	for range 3 {
		time.Sleep(30 * time.Millisecond)
		proxy.CloseAll()
	}
	var ds []webhooks.Delivery
	t.Cleanup(func() {
		if t.Failed() {
			for _, d := range ds {
				t.Logf("delivery %s %s attempts=%d last error %q", d.ID, d.Status, d.AttemptCount, d.LastError)
			}
		}
	})
	// Attempts whose fetch lost its connection wait for River's rescuer
	// (RescueAfter, then its 30s round): hence the longer bound.
	waitUpTo(t, 90*time.Second, "every event delivered", func() bool {
		var err error
		ds, err = svc.Deliveries(context.Background(), tenant, sub.ID, events)
		if err != nil {
			return false // the pool is reconnecting
		}
		for _, d := range ds {
			if d.Status != webhooks.StatusDelivered {
				return false
			}
		}
		return len(ds) == events
	})
	acted, dups, err := ref.Stats()
	if err != nil || acted != events {
		t.Errorf("reference receiver acted on %d events (%v), want %d", acted, err, events)
	}
	attempts := 0
	for _, d := range ds {
		attempts += d.AttemptCount
	}
	t.Logf("%d events, %d attempts, %d requests, %d duplicates stopped by the receiver, lost 0", events, attempts, len(rec.seen()), dups)
}
