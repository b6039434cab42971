package webhooks_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// hanging is a receiver that never answers until released, counting the
// requests it holds at once, per path (one path per subscription) and in all.
type hanging struct {
	mu                  sync.Mutex
	now, peak           int
	perPath, peakOfPath map[string]int
	release             chan struct{}
}

func (h *hanging) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
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
// subscriptions at most its own share.
func TestSlowReceiverHoldsItsOwnShareOnly(t *testing.T) {
	t.Parallel()
	d := dbtest.Postgres(t)
	h := &hanging{perPath: map[string]int{}, peakOfPath: map[string]int{}, release: make(chan struct{})}
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
