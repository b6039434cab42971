package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// newWebhookEnv is newEnv with webhooks: the ticket service writes its
// events to the outbox, and the returned service delivers them once started.
func newWebhookEnv(tb testing.TB, d *db.DB) (*env, *webhooks.Service) {
	tb.Helper()
	ctx := context.Background()
	if err := webhooks.Migrate(ctx, d); err != nil {
		tb.Fatalf("migrate webhooks: %v", err)
	}
	hooks, err := webhooks.New(d, webhooks.Options{
		RetryMin: 50 * time.Millisecond, MaxAttempts: 3, AttemptTimeout: 2 * time.Second,
		PollInterval: 20 * time.Millisecond, AllowPrivate: true,
	})
	if err != nil {
		tb.Fatalf("webhooks: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hooks.Stop(ctx)
	})
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: webhooks.TicketOutbox(hooks), Deliveries: hooks})
	ticketstest.SeedSupport(tb, svc, tenantA)
	return serveEnv(tb, d, svc, hooks), hooks
}

type webhook struct {
	ID     string   `json:"id"`
	URL    string   `json:"url"`
	Events []string `json:"events"`
	Status string   `json:"status"`
	Secret string   `json:"secret"`
}

type webhookDelivery struct {
	ID         string `json:"id"`
	WebhookID  string `json:"webhook_id"`
	EventID    string `json:"event_id"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	AttemptLog []struct {
		Number     int    `json:"number"`
		Outcome    string `json:"outcome"`
		StatusCode int    `json:"status_code"`
	} `json:"attempt_log"`
}

type operationDeliveries struct {
	Deliveries []struct {
		WebhookID string `json:"webhook_id"`
		Status    string `json:"status"`
		Attempts  int    `json:"attempts"`
	} `json:"deliveries"`
}

func TestWebhooksOverREST(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e, hooks := newWebhookEnv(t, d)
		var mu sync.Mutex
		var seen []string
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header.Get("webhook-id"))
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		}))
		t.Cleanup(receiver.Close)
		adm := admin(t, tenantA)

		t.Run("NeedsAdmin", func(t *testing.T) {
			wantProblem(t, do(t, e, req{method: "GET", path: "/api/v1/webhooks", token: token(t, tenantA, authn.ScopeRead, authn.ScopeWrite)}), http.StatusForbidden, "forbidden")
		})
		t.Run("RefusesBadAndMetadataURLs", func(t *testing.T) {
			for _, url := range []string{"ftp://example.com/", "http://169.254.169.254/latest"} {
				wantProblem(t, do(t, e, req{method: "POST", path: "/api/v1/webhooks", token: adm,
					body: `{"url":"` + url + `","events":["ticket.created"]}`}), http.StatusBadRequest, "invalid_input")
			}
			wantProblem(t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/nope", token: adm}), http.StatusBadRequest, "invalid_input")
			wantProblem(t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + uuid.NewString(), token: adm}), http.StatusNotFound, "not_found")
		})

		r := do(t, e, req{method: "POST", path: "/api/v1/webhooks", token: adm,
			body: `{"url":"` + receiver.URL + `/hooks","events":["ticket.created"],"description":"test"}`})
		hook := decode[webhook](t, r, http.StatusCreated)
		if !strings.HasPrefix(hook.Secret, "whsec_") || hook.Status != "active" || r.header.Get("Location") != "/api/v1/webhooks/"+hook.ID {
			t.Fatalf("created webhook = %+v, Location %q", hook, r.header.Get("Location"))
		}
		got := decode[webhook](t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + hook.ID, token: adm}), http.StatusOK)
		if got.Secret != "" || got.URL != hook.URL {
			t.Errorf("GET webhook = %+v: the secret is shown once, at registration", got)
		}
		if other := do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + hook.ID, token: admin(t, tenantB)}); other.status != http.StatusNotFound {
			t.Errorf("another tenant's GET = %d, want 404", other.status)
		}

		op := uuid.NewString()
		decode[ticket](t, do(t, e, req{method: "POST", path: "/api/v1/tickets", token: token(t, tenantA, authn.ScopeWrite), key: op,
			body: `{"project_id":"support","title":"Printer on fire"}`}), http.StatusCreated)
		// Workers not started yet: the delivery is owed, and a manual retry
		// of a pending delivery does not fit.
		st := decode[operationDeliveries](t, do(t, e, req{method: "GET", path: "/api/v1/operations/" + op, token: adm}), http.StatusOK)
		if len(st.Deliveries) != 1 || st.Deliveries[0].WebhookID != hook.ID || st.Deliveries[0].Status != "pending" {
			t.Fatalf("operation deliveries before delivery = %+v", st.Deliveries)
		}
		list := decode[struct{ Deliveries []webhookDelivery }](t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + hook.ID + "/deliveries", token: adm}), http.StatusOK)
		if len(list.Deliveries) != 1 {
			t.Fatalf("deliveries = %+v", list.Deliveries)
		}
		retry := "/api/v1/webhooks/" + hook.ID + "/deliveries/" + list.Deliveries[0].ID + "/retry"
		wantProblem(t, do(t, e, req{method: "POST", path: retry, token: adm}), http.StatusConflict, "state_conflict")

		if err := hooks.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitDelivered := func(attempts int) webhookDelivery {
			t.Helper()
			deadline := time.Now().Add(20 * time.Second)
			for {
				l := decode[struct{ Deliveries []webhookDelivery }](t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + hook.ID + "/deliveries", token: adm}), http.StatusOK)
				if d := l.Deliveries[0]; d.Status == "delivered" && d.Attempts == attempts {
					return d
				}
				if time.Now().After(deadline) {
					t.Fatalf("delivery never reached delivered after %d attempts: %+v", attempts, l.Deliveries)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		first := waitDelivered(1)
		st = decode[operationDeliveries](t, do(t, e, req{method: "GET", path: "/api/v1/operations/" + op, token: adm}), http.StatusOK)
		if st.Deliveries[0].Status != "delivered" || st.Deliveries[0].Attempts != 1 {
			t.Errorf("operation deliveries after delivery = %+v", st.Deliveries)
		}
		decode[webhookDelivery](t, do(t, e, req{method: "POST", path: retry, token: adm}), http.StatusAccepted)
		again := waitDelivered(2)
		mu.Lock()
		if len(seen) != 2 || seen[0] != first.EventID || seen[1] != first.EventID || again.EventID != first.EventID {
			t.Errorf("receiver saw webhook-ids %v, want %s twice (a manual retry keeps it)", seen, first.EventID)
		}
		mu.Unlock()
		if len(again.AttemptLog) != 2 || again.AttemptLog[1].StatusCode != http.StatusNoContent {
			t.Errorf("attempt log = %+v", again.AttemptLog)
		}

		if r := do(t, e, req{method: "DELETE", path: "/api/v1/webhooks/" + hook.ID, token: adm}); r.status != http.StatusNoContent {
			t.Fatalf("DELETE = %d %s", r.status, r.body)
		}
		wantProblem(t, do(t, e, req{method: "GET", path: "/api/v1/webhooks/" + hook.ID, token: adm}), http.StatusNotFound, "not_found")
	})
}
