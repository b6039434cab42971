package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestFailedDeliveriesPageRetriesWithTheSameWebhookID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := dbtest.SQLite(t)
	if err := webhooks.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}
	hooks, err := webhooks.New(d, webhooks.Options{MaxAttempts: 1, PollInterval: 20 * time.Millisecond, AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := hooks.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hooks.Stop(ctx)
	})
	var status atomic.Int32
	status.Store(http.StatusInternalServerError)
	var lastID atomic.Value
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastID.Store(r.Header.Get("webhook-id"))
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(receiver.Close)
	sub, _, err := hooks.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: receiver.URL, Events: webhooks.EventTypes})
	if err != nil {
		t.Fatal(err)
	}

	e := newEnv(t, console.Config{Webhooks: hooks})
	// The console's service writes to its own database; the outbox needs
	// this one, so write through a service over it.
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: webhooks.TicketOutbox(hooks), Deliveries: hooks})
	ticketstest.SeedSupport(t, svc, tenant)
	mustCreate(t, svc, "alice", "Printer on fire")
	var failed webhooks.Delivery
	waitUntil(t, func() bool {
		ds, err := hooks.Deliveries(ctx, tenant, sub.ID, 10)
		if err != nil || len(ds) != 1 {
			return false
		}
		failed = ds[0]
		return failed.Status == webhooks.StatusFailed
	})

	reader := e.signedIn(t, token(t, "rita", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	if p := e.get(t, reader, "/console/deliveries"); p.status != http.StatusForbidden {
		t.Errorf("without tickets:admin: status %d, want 403", p.status)
	}
	adm := e.signedIn(t, token(t, "ada", time.Now(), authn.ScopeRead, authn.ScopeAdmin))
	p := e.get(t, adm, "/console/deliveries")
	if p.status != http.StatusOK || !strings.Contains(p.body, failed.WebhookID.String()) || !strings.Contains(p.body, "Failed deliveries") {
		t.Fatalf("failed-deliveries page: status %d, want 200 listing webhook-id %s:\n%s", p.status, failed.WebhookID, p.body)
	}
	form := p.form(t, "retry-"+failed.ID.String())
	status.Store(http.StatusNoContent)
	resp := e.post(t, adm, "/console/webhooks/"+sub.ID.String()+"/deliveries/"+failed.ID.String()+"/retry", form)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/deliveries?done=retried" {
		t.Fatalf("retry: status %d Location %q, want 303 to the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	waitUntil(t, func() bool {
		got, err := hooks.Delivery(ctx, tenant, sub.ID, failed.ID)
		return err == nil && got.Status == webhooks.StatusDelivered
	})
	if id, _ := lastID.Load().(string); id != failed.WebhookID.String() {
		t.Errorf("retry carried webhook-id %q, want %s", id, failed.WebhookID)
	}
	if p := e.get(t, adm, "/console/deliveries"); strings.Contains(p.body, failed.WebhookID.String()) {
		t.Errorf("a delivered delivery is still listed as failed")
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
