package webhooks_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// BenchmarkOneSubscriptionKeepsUp answers whether one subscription that
// receives every write keeps up with the writes one replica takes: 16
// creators make tickets through the real ticket service (PostgreSQL, limits
// off, the webhook defaults) as fast as it lets them, 3,000 per iteration,
// while one subscription's receiver answers at once. It reports the write
// rate (creates/s), the delivery rate over the same run, from the first
// write to the last delivery (deliveries/s), and how long deliveries ran on
// after the last write (drain-ms): deliveries keep up when drain-ms stays
// about the poll interval instead of growing with the run.
func BenchmarkOneSubscriptionKeepsUp(b *testing.B) {
	const creators, perIteration = 16, 3000
	d := dbtest.Postgres(b)
	var delivered atomic.Int64
	var mu sync.Mutex
	var lastDelivery time.Time
	srv := newServer(b, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		delivered.Add(1)
		mu.Lock()
		lastDelivery = time.Now()
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	hooks := newService(b, d, webhooks.Options{AllowPrivate: true}, true)
	subscribe(b, hooks, srv.URL)
	svc := ticketService(b, d, hooks, webhooks.TicketOutbox(hooks))
	caller := tickets.Caller{Tenant: tenant, Subject: "alice"}
	var writing, running time.Duration
	var drains []time.Duration
	for b.Loop() {
		want := delivered.Load() + perIteration
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range creators {
			wg.Go(func() {
				for next.Add(1) <= perIteration {
					_, err := svc.CreateTicket(context.Background(), caller, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer on fire"})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		wrote := time.Now()
		for delivered.Load() < want {
			if time.Since(wrote) > 2*time.Minute {
				b.Fatalf("%d of %d delivered two minutes after the last write", delivered.Load()-want+perIteration, perIteration)
			}
			time.Sleep(5 * time.Millisecond)
		}
		mu.Lock()
		last := lastDelivery
		mu.Unlock()
		writing += wrote.Sub(start)
		running += last.Sub(start)
		drains = append(drains, last.Sub(wrote))
	}
	n := float64(b.N * perIteration)
	b.ReportMetric(n/writing.Seconds(), "creates/s")
	b.ReportMetric(n/running.Seconds(), "deliveries/s")
	var drain time.Duration
	for _, d := range drains {
		drain = max(drain, d)
	}
	b.ReportMetric(float64(drain.Milliseconds()), "drain-ms")
}
