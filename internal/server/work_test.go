package server_test

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestWorkSlotsServeEveryWaitingTenant: with one work slot for the whole
// server and no rate limits, tenant A keeps it contended with 32 callers
// creating at once; tenant B's creates and lists wait their turn beside
// A's queue (limits.Work) and are all answered, and A's callers are
// answered too or refused only at A's own concurrency cap, never with
// another failure. Over PostgreSQL and SQLite.
func TestWorkSlotsServeEveryWaitingTenant(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		// A's calls each wait behind up to 31 others of A's for the one
		// slot: on a loaded machine that outlasts the default wait bound,
		// a refusal this test does not guard, so the bound here only stops
		// a hang.
		edge := server.Edge{WorkSlots: 1, PoolSize: sqlDB.Stats().MaxOpenConnections, AdmissionWait: 2 * time.Minute}
		env := servertest.Start(t, d, servertest.Options{Edge: edge})
		env.SeedProject(t, "a")
		env.SeedProject(t, "b")
		tokA := env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite)
		cs := env.Connect(t, env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite))

		stop := make(chan struct{})
		var created, capped, other atomic.Int64
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					status, body := floodCreate(env, tokA)
					switch {
					case status == http.StatusTooManyRequests:
						capped.Add(1)
					case status == http.StatusOK && !strings.Contains(body, `"isError":true`):
						created.Add(1)
					case status != 0: // 0: cut off as the test ends
						other.Add(1)
					}
				}
			})
		}
		eventually(t, "tenant A's callers to be served", func() bool { return created.Load() > 10 })
		for range 5 {
			wantAnswered(t, cs, mcptools.ToolCreateTicket, createTicketArgs())
			wantAnswered(t, cs, mcptools.ToolListTickets, map[string]any{"project_id": "support"})
		}
		close(stop)
		wg.Wait()
		if other.Load() > 0 {
			t.Errorf("tenant A: %d calls answered with an error other than its concurrency cap's 429", other.Load())
		}
		t.Logf("tenant A: %d created, %d refused at its cap", created.Load(), capped.Load())
	})
}
