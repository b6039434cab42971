package webhooks_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestFailingReceiverIsRetriedWithTheSameWebhookIDUntilDelivered(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		const failures = 3
		rec := newRecorder(t, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusTooManyRequests)
		opts := fastOptions()
		svc := newService(t, d, opts, true)
		sub, secret := subscribe(t, svc, rec.srv.URL)
		ref := rec.verifyWith(secret)

		ev := newEvent(webhooks.TypeTicketUpdated)
		enqueue(t, d, svc, ev, true)
		got := waitStatus(t, svc, ev.OperationID, webhooks.StatusDelivered)
		if got.Attempts != failures+1 {
			t.Errorf("attempts = %d, want %d", got.Attempts, failures+1)
		}
		seen := rec.seen()
		if len(seen) != failures+1 {
			t.Fatalf("receiver saw %d requests, want %d", len(seen), failures+1)
		}
		for i, r := range seen {
			if r.webhookID != ev.ID.String() {
				t.Errorf("request %d webhook-id %s, want %s", i+1, r.webhookID, ev.ID)
			}
		}
		// Backoff: retry n waits at least RetryMin·2^(n-1) (jitter only adds).
		// Only the lower bound is checked; how much later it came is load.
		for n := 1; n < len(seen); n++ {
			floor := opts.RetryMin << (n - 1)
			if gap := seen[n].at.Sub(seen[n-1].at); gap < floor {
				t.Errorf("retry %d came %v after attempt %d, before the backoff floor %v", n, gap, n, floor)
			}
		}
		if acted, dups, err := ref.Stats(); err != nil || acted != 1 || dups != 0 {
			t.Errorf("reference receiver acted %d, duplicates %d, err %v; want 1, 0", acted, dups, err)
		}

		ds, err := svc.Deliveries(context.Background(), tenant, sub.ID, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries = %+v, %v", ds, err)
		}
		wantCodes := []int{500, 503, 429, 204}
		if len(ds[0].Attempts) != len(wantCodes) {
			t.Fatalf("attempts recorded: %+v", ds[0].Attempts)
		}
		for i, a := range ds[0].Attempts {
			wantOutcome := webhooks.OutcomeFailed
			if i == len(wantCodes)-1 {
				wantOutcome = webhooks.OutcomeDelivered
			}
			if a.Number != i+1 || a.StatusCode != wantCodes[i] || a.Outcome != wantOutcome || a.StartedAt.IsZero() {
				t.Errorf("attempt %d = %+v, want number %d, status %d, outcome %s", i+1, a, i+1, wantCodes[i], wantOutcome)
			}
			if wantOutcome == webhooks.OutcomeFailed && !strings.Contains(a.Error, "answered") {
				t.Errorf("attempt %d error %q does not say what the receiver answered", i+1, a.Error)
			}
		}
	})
}

func TestDeliveryFailsAfterMaxAttemptsAndAManualRetryDeliversIt(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		opts := fastOptions()
		opts.MaxAttempts = 3
		rec := newRecorder(t, 500, 500, 500)
		svc := newService(t, d, opts, true)
		sub, secret := subscribe(t, svc, rec.srv.URL)
		ref := rec.verifyWith(secret)

		ev := newEvent(webhooks.TypeCommentCreated)
		enqueue(t, d, svc, ev, true)
		got := waitStatus(t, svc, ev.OperationID, webhooks.StatusFailed)
		if got.Attempts != 3 || got.LastError != "receiver answered 500" {
			t.Errorf("failed delivery = %+v, want 3 attempts and the last answer", got)
		}

		ds, err := svc.Deliveries(context.Background(), tenant, sub.ID, 10)
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries = %+v, %v", ds, err)
		}
		// The receiver holds the manual retry's attempt, so the delivery is
		// still pending when the second Retry looks at it.
		release := rec.hold()
		retried, err := svc.Retry(context.Background(), tenant, sub.ID, ds[0].ID)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		if retried.Status != webhooks.StatusPending {
			t.Errorf("after retry status = %s, want pending", retried.Status)
		}
		if _, err := svc.Retry(context.Background(), tenant, sub.ID, ds[0].ID); !errors.Is(err, webhooks.ErrConflict) {
			t.Errorf("retry of a pending delivery: %v, want ErrConflict", err)
		}
		release()
		got = waitStatus(t, svc, ev.OperationID, webhooks.StatusDelivered)
		if got.Attempts != 4 || got.LastError != "" {
			t.Errorf("delivered after manual retry = %+v, want 4 attempts, no error", got)
		}
		for _, r := range rec.seen() {
			if r.webhookID != ev.ID.String() {
				t.Errorf("manual retry changed the webhook-id: %s", r.webhookID)
			}
		}
		if acted, _, err := ref.Stats(); err != nil || acted != 1 {
			t.Errorf("reference receiver acted %d times (%v), want 1", acted, err)
		}
	})
}

func TestGoneDisablesTheSubscription(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		rec := newRecorder(t, http.StatusGone)
		svc := newService(t, d, fastOptions(), true)
		sub, _ := subscribe(t, svc, rec.srv.URL)

		ev := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, svc, ev, true)
		got := waitStatus(t, svc, ev.OperationID, webhooks.StatusFailed)
		if got.Attempts != 1 || !strings.Contains(got.LastError, "410") {
			t.Errorf("delivery = %+v, want one attempt failed by 410", got)
		}
		s, err := svc.GetSubscription(context.Background(), tenant, sub.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != webhooks.SubscriptionDisabled || !strings.Contains(s.DisabledReason, "410") {
			t.Errorf("subscription = %+v, want disabled by 410", s)
		}

		later := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, svc, later, true)
		if ds, err := svc.DeliveriesFor(context.Background(), tenant, later.OperationID); err != nil || len(ds) != 0 {
			t.Errorf("a disabled webhook got deliveries %+v (%v)", ds, err)
		}
		ds, err := svc.Deliveries(context.Background(), tenant, sub.ID, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries = %+v, %v", ds, err)
		}
		if _, err := svc.Retry(context.Background(), tenant, sub.ID, ds[0].ID); !errors.Is(err, webhooks.ErrConflict) {
			t.Errorf("retry on a disabled webhook: %v, want ErrConflict", err)
		}
		if n := len(rec.seen()); n != 1 {
			t.Errorf("receiver saw %d requests after answering 410, want 1", n)
		}
	})
}

func TestTimeoutIsAnUnknownAttemptAndRetried(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	opts := fastOptions()
	// Long enough that only the hanging first request times out, even on a
	// loaded machine; the attempts after it are answered at once.
	opts.AttemptTimeout = time.Second
	release := make(chan struct{})
	rec := newRecorder(t)
	var answered atomic.Bool
	var hang http.HandlerFunc = func(w http.ResponseWriter, r *http.Request) {
		if answered.CompareAndSwap(false, true) {
			select { // longer than the attempt timeout; released at cleanup
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		rec.ServeHTTP(w, r)
	}
	srv := newServer(t, hang)
	t.Cleanup(func() { close(release) })
	svc := newService(t, d, opts, true)
	sub, _ := subscribe(t, svc, srv.URL)

	ev := newEvent(webhooks.TypeTicketCreated)
	enqueue(t, d, svc, ev, true)
	got := waitStatus(t, svc, ev.OperationID, webhooks.StatusDelivered)
	if got.Attempts < 2 {
		t.Errorf("attempts = %d, want the timed-out one and at least one retry", got.Attempts)
	}
	ds, err := svc.Deliveries(context.Background(), tenant, sub.ID, 0)
	if err != nil || len(ds) != 1 || len(ds[0].Attempts) != got.Attempts {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
	if last := ds[0].Attempts[len(ds[0].Attempts)-1]; last.Outcome != webhooks.OutcomeDelivered {
		t.Errorf("last attempt = %+v, want delivered", last)
	}
	first := ds[0].Attempts[0]
	if first.Outcome != webhooks.OutcomeUnknown || first.StatusCode != 0 || !strings.Contains(first.Error, "no answer") {
		t.Errorf("timed-out attempt = %+v, want unknown without status", first)
	}
}
