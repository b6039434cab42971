package webhooks_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func dialects(b *testing.B, f func(b *testing.B, d *db.DB)) {
	b.Run("postgres", func(b *testing.B) { f(b, dbtest.Postgres(b)) })
	b.Run("sqlite", func(b *testing.B) { f(b, dbtest.SQLite(b)) })
}

// BenchmarkEnqueue measures what the outbox adds to a write's transaction:
// one event fanned out to one subscription (a delivery row and a job).
func BenchmarkEnqueue(b *testing.B) {
	dialects(b, func(b *testing.B, d *db.DB) {
		svc := newService(b, d, fastOptions(), false)
		subscribe(b, svc, "http://127.0.0.1:9/")
		b.ResetTimer()
		for b.Loop() {
			enqueue(b, d, svc, newEvent(webhooks.TypeTicketCreated), true)
		}
	})
}

// BenchmarkCommitToDelivery measures one event from COMMIT to the
// receiver's 2xx with the default 500ms poll interval.
func BenchmarkCommitToDelivery(b *testing.B) {
	dialects(b, func(b *testing.B, d *db.DB) {
		got := make(chan struct{}, 1)
		srv := newServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusNoContent)
			got <- struct{}{}
		}))
		opts := fastOptions()
		opts.PollInterval = 0
		svc := newService(b, d, opts, true)
		subscribe(b, svc, srv.URL)
		b.ResetTimer()
		for b.Loop() {
			enqueue(b, d, svc, newEvent(webhooks.TypeTicketCreated), true)
			select {
			case <-got:
			case <-time.After(20 * time.Second):
				b.Fatal("no delivery")
			}
		}
		b.StopTimer()
	})
}
