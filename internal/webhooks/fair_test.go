package webhooks_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// hanging is a receiver that answers its first answer requests at once and
// then never answers until released, counting the requests it holds at
// once, per path (one path per subscription) and in all.
type hanging struct {
	mu                  sync.Mutex
	answer              int
	now, peak           int
	perPath, peakOfPath map[string]int
	release             chan struct{}
}

func newHanging(answer int) *hanging {
	return &hanging{answer: answer, perPath: map[string]int{}, peakOfPath: map[string]int{}, release: make(chan struct{})}
}

func (h *hanging) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.answer > 0 {
		h.answer--
		h.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.now++
	h.peak = max(h.peak, h.now)
	h.perPath[r.URL.Path]++
	h.peakOfPath[r.URL.Path] = max(h.peakOfPath[r.URL.Path], h.perPath[r.URL.Path])
	h.mu.Unlock()
	select {
	case <-h.release:
	case <-r.Context().Done():
	}
	h.mu.Lock()
	h.now--
	h.perPath[r.URL.Path]--
	h.mu.Unlock()
	w.WriteHeader(http.StatusServiceUnavailable)
}

// TestSlowReceiverHoldsItsOwnShareOnly gives tenant acme three subscriptions
// whose receiver hangs, and a backlog for each, then queues deliveries for
// tenant globex: globex's are all delivered while acme's still hang, because
// acme holds at most its tenant share of the workers and each of its
// subscriptions at most its own share: a receiver that has never answered
// quickly borrows no idle worker.
func TestSlowReceiverHoldsItsOwnShareOnly(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, testSlowReceiverHoldsItsOwnShareOnly)
}

func testSlowReceiverHoldsItsOwnShareOnly(t *testing.T, d *db.DB) {
	h := newHanging(0)
	slow := newServer(t, h)
	fast := newRecorder(t)
	opts := fastOptions()
	opts.Concurrency = 4
	opts.TenantShare, opts.SubscriptionShare = 2, 1
	opts.AttemptTimeout = time.Minute
	svc := newService(t, d, opts, true)
	t.Cleanup(func() { close(h.release) }) // runs before the service stops
	for _, path := range []string{"/a", "/b", "/c"} {
		subscribe(t, svc, slow.URL+path)
	}
	if _, _, err := svc.CreateSubscription(context.Background(), "globex", webhooks.NewSubscription{
		URL: fast.srv.URL + "/hooks", Events: webhooks.EventTypes,
	}); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		enqueue(t, d, svc, newEvent(webhooks.TypeTicketCreated), true)
	}
	waitFor(t, "acme's receiver holding requests", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.now > 0
	})
	var others []webhooks.Event
	for range 5 {
		ev := newEvent(webhooks.TypeTicketCreated)
		ev.Tenant = "globex"
		enqueue(t, d, svc, ev, true)
		others = append(others, ev)
	}
	waitFor(t, "globex's deliveries while acme's receiver hangs", func() bool {
		for _, ev := range others {
			ds, err := svc.DeliveriesFor(context.Background(), "globex", ev.OperationID)
			if err != nil || len(ds) != 1 || ds[0].Status != webhooks.StatusDelivered {
				return false
			}
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.now == 0 {
		t.Fatal("acme's requests were no longer hanging; the test proves nothing")
	}
	if h.peak > 2 {
		t.Errorf("acme held %d workers at once, want at most its tenant share of 2", h.peak)
	}
	for path, n := range h.peakOfPath {
		if n > 1 {
			t.Errorf("subscription %s held %d workers at once, want at most its share of 1", path, n)
		}
	}
}

// TestLoneSubscriptionBorrowsIdleWorkers gives tenant acme one subscription
// whose receiver answers once at once and then hangs, with a backlog and
// nobody else waiting: it holds three of the four workers, over its share
// of one and its tenant's of two, and leaves the reserve of one free. Tenant
// globex's deliveries, queued then, all go through that reserve while
// acme's requests still hang.
func TestLoneSubscriptionBorrowsIdleWorkers(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		h := newHanging(1)
		slow := newServer(t, h)
		fast := newRecorder(t)
		opts := fastOptions()
		opts.Concurrency = 4
		opts.TenantShare, opts.SubscriptionShare = 2, 1
		// A minute, so that a tenth of it (6s), the age at which an attempt
		// marks its receiver slow and stops its borrowing, is far above
		// the moments between the backlog's attempts.
		opts.AttemptTimeout = time.Minute
		svc := newService(t, d, opts, true)
		t.Cleanup(func() { close(h.release) })
		subscribe(t, svc, slow.URL+"/a")
		if _, _, err := svc.CreateSubscription(context.Background(), "globex", webhooks.NewSubscription{
			URL: fast.srv.URL + "/hooks", Events: webhooks.EventTypes,
		}); err != nil {
			t.Fatal(err)
		}
		for range 8 {
			enqueue(t, d, svc, newEvent(webhooks.TypeTicketCreated), true)
		}
		waitFor(t, "acme's lone subscription holding three workers", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			return h.now >= 3
		})
		var others []webhooks.Event
		for range 3 {
			ev := newEvent(webhooks.TypeTicketCreated)
			ev.Tenant = "globex"
			enqueue(t, d, svc, ev, true)
			others = append(others, ev)
		}
		waitFor(t, "globex's deliveries through the reserve", func() bool {
			for _, ev := range others {
				ds, err := svc.DeliveriesFor(context.Background(), "globex", ev.OperationID)
				if err != nil || len(ds) != 1 || ds[0].Status != webhooks.StatusDelivered {
					return false
				}
			}
			return true
		})
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.now != 3 || h.peak != 3 {
			t.Errorf("acme holds %d workers (peak %d), want 3: its share, borrowed idle workers, not the reserve", h.now, h.peak)
		}
	})
}
