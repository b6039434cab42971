package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/examples/webhook-receiver/receiver"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/webhooks"
)

const tenant = "acme"

// fastOptions keeps tests quick: tiny backoff, quick polling, loopback
// receivers allowed.
func fastOptions() webhooks.Options {
	return webhooks.Options{
		RetryMin:       50 * time.Millisecond,
		RetryMax:       400 * time.Millisecond,
		MaxAttempts:    5,
		AttemptTimeout: 2 * time.Second,
		PollInterval:   20 * time.Millisecond,
		AllowPrivate:   true,
	}
}

// newService migrates River's schema into d and returns a service over it,
// its workers started when start is true and stopped at cleanup.
func newService(tb testing.TB, d *db.DB, opts webhooks.Options, start bool) *webhooks.Service {
	tb.Helper()
	ctx := context.Background()
	if err := webhooks.Migrate(ctx, d); err != nil {
		tb.Fatalf("migrate: %v", err)
	}
	svc, err := webhooks.New(d, opts)
	if err != nil {
		tb.Fatalf("new: %v", err)
	}
	if start {
		if err := svc.Start(ctx); err != nil {
			tb.Fatalf("start: %v", err)
		}
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := svc.Stop(ctx); err != nil {
				tb.Errorf("stop: %v", err)
			}
		})
	}
	return svc
}

func newEvent(typ string) webhooks.Event {
	ticket := uuid.Must(uuid.NewV7())
	return webhooks.Event{
		ID:          uuid.Must(uuid.NewV7()),
		Tenant:      tenant,
		Type:        typ,
		OperationID: uuid.Must(uuid.NewV7()),
		TicketID:    ticket,
		OccurredAt:  time.Now().UTC(),
		Data:        json.RawMessage(fmt.Sprintf(`{"ticket":{"id":%q,"title":"Printer on fire"}}`, ticket)),
	}
}

// enqueue writes ev inside a transaction that commits or rolls back, the way
// a ticket write will.
func enqueue(tb testing.TB, d *db.DB, svc *webhooks.Service, ev webhooks.Event, commit bool) {
	tb.Helper()
	errRollback := fmt.Errorf("roll back on purpose")
	err := d.Gorm.Transaction(func(tx *gorm.DB) error {
		if err := svc.Enqueue(tx, ev); err != nil {
			return err
		}
		if !commit {
			return errRollback
		}
		return nil
	})
	if commit && err != nil || !commit && err != errRollback {
		tb.Fatalf("enqueue (commit=%v): %v", commit, err)
	}
}

// subscribe registers url for every event type.
func subscribe(tb testing.TB, svc *webhooks.Service, url string) (webhooks.Subscription, string) {
	tb.Helper()
	sub, secret, err := svc.CreateSubscription(context.Background(), tenant, webhooks.NewSubscription{
		URL: url, Events: webhooks.EventTypes, Description: "test receiver",
	})
	if err != nil {
		tb.Fatalf("create subscription: %v", err)
	}
	return sub, secret
}

// waitFor polls cond until it holds or 20 s pass: deliveries are
// asynchronous, and the bound only stops a broken test from hanging.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	waitUpTo(tb, 20*time.Second, what, cond)
}

func waitUpTo(tb testing.TB, limit time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// deliveryOf returns the single delivery of an operation.
func deliveryOf(tb testing.TB, svc *webhooks.Service, op uuid.UUID) webhooks.DeliveryStatus {
	tb.Helper()
	ds, err := svc.DeliveriesFor(context.Background(), tenant, op)
	if err != nil {
		tb.Fatalf("deliveries for %s: %v", op, err)
	}
	if len(ds) != 1 {
		tb.Fatalf("deliveries for %s: got %d, want 1: %+v", op, len(ds), ds)
	}
	return ds[0]
}

// waitStatus waits for an operation's single delivery to reach status.
func waitStatus(tb testing.TB, svc *webhooks.Service, op uuid.UUID, status string) webhooks.DeliveryStatus {
	tb.Helper()
	var last webhooks.DeliveryStatus
	waitFor(tb, "delivery "+status, func() bool {
		last = deliveryOf(tb, svc, op)
		return last.Status == status
	})
	return last
}

// request is one request a test receiver saw.
type request struct {
	webhookID string
	at        time.Time
}

// recorder is an HTTP receiver for tests: it answers with the next status
// of a script (then passes to the reference receiver), and notes every
// request's webhook-id and arrival time.
type recorder struct {
	tb       testing.TB
	ref      *receiver.Receiver
	mu       sync.Mutex
	script   []int
	requests []request
	srv      *httptest.Server
	// held, when set, keeps every request past the script waiting until it
	// is closed, so a test can look at a delivery while it is still pending.
	held chan struct{}
}

// newRecorder starts a receiver; secret is set later with verifyWith since
// the secret exists only once the subscription does.
func newRecorder(tb testing.TB, script ...int) *recorder {
	tb.Helper()
	r := &recorder{tb: tb, script: script}
	r.srv = httptest.NewServer(r)
	tb.Cleanup(r.srv.Close)
	return r
}

// hold makes requests past the script wait until the returned release is
// called (also at cleanup, so no request outlives the test).
func (r *recorder) hold() (release func()) {
	held := make(chan struct{})
	r.mu.Lock()
	r.held = held
	r.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	r.tb.Cleanup(release)
	return release
}

// verifyWith hands every request past the script to a reference receiver
// that checks it against secret and deduplicates it.
func (r *recorder) verifyWith(secret string) *receiver.Receiver {
	r.tb.Helper()
	ref, err := receiver.Open(filepath.Join(r.tb.TempDir(), "receiver.db"), secret)
	if err != nil {
		r.tb.Fatalf("open reference receiver: %v", err)
	}
	r.tb.Cleanup(func() { _ = ref.Close() })
	r.mu.Lock()
	r.ref = ref
	r.mu.Unlock()
	return ref
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, request{webhookID: req.Header.Get("webhook-id"), at: time.Now()})
	var status int
	if len(r.script) > 0 {
		status, r.script = r.script[0], r.script[1:]
	}
	ref, held := r.ref, r.held
	r.mu.Unlock()
	if status == 0 && held != nil {
		select {
		case <-held:
		case <-req.Context().Done():
			return
		}
	}
	switch {
	case status != 0:
		w.WriteHeader(status)
	case ref != nil:
		ref.ServeHTTP(w, req)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func (r *recorder) seen() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.requests...)
}

// newServer starts an HTTP server for h, closed at cleanup.
func newServer(tb testing.TB, h http.Handler) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}
