package main

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestServeServesOneTenantsBurst sends an agent host's burst of parallel
// create_ticket calls from one token to `ticketd serve` with the default
// edge settings (those of serve --dev; --dev changes none of them): on
// SQLite 16 calls with their own operation IDs are all created, and on
// PostgreSQL 24 calls of one operation make one ticket; no call of either
// is refused (docs/operators.md#admission-and-fair-share).
func TestServeServesOneTenantsBurst(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		dbURL     func(testing.TB) string
		calls     int
		identical bool
	}{
		{"sqlite", dbtest.SQLiteURL, 16, false},
		{"postgres", dbtest.PostgresURL, 24, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rawURL := tc.dbURL(t)
			seedProject(t, rawURL, "acme")
			env := baseEnv(rawURL)
			s := startServe(t, env)
			session := connect(t, s.URL+"/mcp", mintToken(t, env, "--tenant", "acme", "--subject", "alice"))

			opID := uuid.NewString()
			start := make(chan struct{})
			errs := make(chan error, tc.calls)
			var wg sync.WaitGroup
			for range tc.calls {
				wg.Go(func() {
					id := opID
					if !tc.identical {
						id = uuid.NewString()
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					<-start
					res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "create_ticket",
						Arguments: map[string]any{"operation_id": id, "project_id": "support", "title": "Burst"}})
					if err == nil && res.IsError {
						err = toolError(res)
					}
					errs <- err
				})
			}
			close(start)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("a call of the burst: %v, want served", err)
				}
			}
			want := int64(tc.calls)
			if tc.identical {
				want = 1
			}
			d, err := db.Open(context.Background(), rawURL)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if got := dbtest.CountRows(t, d, "tickets", "acme"); got != want {
				t.Errorf("%d tickets after the burst, want %d", got, want)
			}
		})
	}
}
