package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestReadinessDoesNotQueueBehindTheMainPool takes every connection of the
// service's pool, as a flood of writes would, and checks that the
// readiness probe still answers: it pings over a pool of its own. The
// control ping through the main pool shows the saturation is real.
func TestReadinessDoesNotQueueBehindTheMainPool(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	main, err := db.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = main.Close() })
	pool, err := main.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	held := holdAll(t, pool)

	short, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := pool.PingContext(short); err == nil {
		t.Fatalf("a ping through the main pool with all %d connections held succeeded; the pool is not saturated", held)
	}
	check, closeProbe, err := openProbe(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer closeProbe()
	probeCtx, cancelProbe := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancelProbe()
	if err := check(probeCtx); err != nil {
		t.Errorf("readiness ping with the main pool saturated: %v", err)
	}
}

// holdAll takes every connection pool allows until the test ends and
// returns how many.
func holdAll(t *testing.T, pool *sql.DB) int {
	t.Helper()
	n := pool.Stats().MaxOpenConnections
	for range n {
		c, err := pool.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	return n
}
