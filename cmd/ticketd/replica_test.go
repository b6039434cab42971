package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/pgaftest"
)

// TestReadReplicaNeverMissesOwnWrite serves lists, search and history from
// the pg_auto_failover formation's hot standby (TICKETD_READ_DATABASE_URL)
// while the standby's replay is paused, so it lags further behind with every
// write (docs/scale.md). Each round creates a ticket (reading it and its
// operation back at once, which always read the primary), updates it and
// comments on it, and at once reads all three back through the read path:
// none may be missing, though the standby itself holds none of them. The metrics show the
// lag and that the primary answered; once replay resumes and the standby
// catches up, the standby answers again. Figures: go test -v -run ReadReplica
// ./cmd/ticketd under make test's environment.
func TestReadReplicaNeverMissesOwnWrite(t *testing.T) {
	t.Parallel()
	cluster := pgaftest.Start(t)
	addr := freeAddr(t)
	base := "http://" + addr
	srv := startServe(t, with(baseEnv(cluster.URL()), "TICKETD_ADDR", addr,
		"TICKETD_READ_DATABASE_URL", cluster.NodeURL(1), "TICKETD_RATE_LIMIT_WRITES", "0", "TICKETD_RATE_LIMIT_READS", "0"))
	defer func() {
		if t.Failed() {
			t.Logf("ticketd stderr:\n%s", srv.Stderr)
		}
	}()
	token, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
		Issuer: "https://issuer.test", Audience: base + "/mcp", Tenant: "acme", Subject: "agent",
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite}, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	seedProject(t, cluster.URL(), "acme")
	standby, err := sql.Open("pgx", cluster.NodeURL(1))
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// roundTrip writes and reads back; it returns how many of the three
	// writes the reads missed and whether the standby already held the
	// ticket when the reads ran.
	roundTrip := func(round int) (misses int, onStandby bool) {
		word := "w" + strings.ReplaceAll(uuid.NewString(), "-", "")
		var created struct {
			ID string `json:"id"`
		}
		createKey := uuid.NewString()
		api(t, "POST", base+"/api/v1/tickets", token, map[string]any{"project_id": "support", "title": "Replica " + word},
			http.StatusCreated, &created, "Idempotency-Key", createKey)
		// What answers for the write itself reads the primary.
		api(t, "GET", base+"/api/v1/tickets/"+created.ID, token, nil, http.StatusOK, nil)
		var op struct {
			Status string `json:"status"`
		}
		api(t, "GET", base+"/api/v1/operations/"+createKey, token, nil, http.StatusOK, &op)
		if op.Status != "succeeded" {
			misses++
			t.Errorf("round %d: its own create's operation is %q, want succeeded", round, op.Status)
		}
		api(t, "PATCH", base+"/api/v1/tickets/"+created.ID, token, map[string]any{"description": fmt.Sprintf("round %d", round)},
			http.StatusOK, nil, "Idempotency-Key", uuid.NewString())
		var comment struct {
			ID string `json:"id"`
		}
		api(t, "POST", base+"/api/v1/tickets/"+created.ID+"/comments", token, map[string]any{"body": "seen " + word},
			http.StatusCreated, &comment, "Idempotency-Key", uuid.NewString())

		var found struct {
			Tickets []struct{ ID string } `json:"tickets"`
		}
		api(t, "GET", base+"/api/v1/tickets?query="+word, token, nil, http.StatusOK, &found)
		if len(found.Tickets) != 1 || found.Tickets[0].ID != created.ID {
			misses++
			t.Errorf("round %d: search for its own new ticket found %v", round, found.Tickets)
		}
		var events struct {
			Events []struct{ Kind string } `json:"events"`
		}
		api(t, "GET", base+"/api/v1/tickets/"+created.ID+"/events", token, nil, http.StatusOK, &events)
		if len(events.Events) != 3 || events.Events[1].Kind != "updated" {
			misses++
			t.Errorf("round %d: history of its own ticket is %v, want created, updated, commented", round, events.Events)
		}
		var comments struct {
			Comments []struct{ ID string } `json:"comments"`
		}
		api(t, "GET", base+"/api/v1/tickets/"+created.ID+"/comments", token, nil, http.StatusOK, &comments)
		if len(comments.Comments) != 1 || comments.Comments[0].ID != comment.ID {
			misses++
			t.Errorf("round %d: comments of its own ticket are %v, want %s", round, comments.Comments, comment.ID)
		}
		var n int
		if err := standby.QueryRowContext(ctx, "SELECT count(*) FROM tickets WHERE id = $1", created.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return misses, n == 1
	}

	// Lagging: replay paused, the standby holds none of the new writes.
	if _, err := standby.ExecContext(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_, _ = standby.ExecContext(context.Background(), "SELECT pg_wal_replay_resume()")
		}
	}()
	const rounds = 10
	misses, heldByStandby := 0, 0
	for r := range rounds {
		m, held := roundTrip(r)
		misses += m
		if held {
			heldByStandby++
		}
	}
	lagging := scrapeReplica(t, base)
	if heldByStandby != 0 {
		t.Errorf("the standby held %d of the %d new tickets with replay paused; the test made no lag", heldByStandby, rounds)
	}
	if lagging.lag <= 0 {
		t.Errorf("ticketd_replica_lag_seconds = %v with replay paused, want > 0", lagging.lag)
	}
	if lagging.primary < 3*rounds {
		t.Errorf("the primary served %d reads while the standby lagged, want ≥ %d", lagging.primary, 3*rounds)
	}

	// Caught up: replay resumed, the standby answers again.
	if _, err := standby.ExecContext(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
		t.Fatal(err)
	}
	resumed = true
	waitFor(t, func() bool { return scrapeReplica(t, base).lag == 0 })
	before := scrapeReplica(t, base)
	var page struct {
		Tickets []struct{ ID string } `json:"tickets"`
	}
	api(t, "GET", base+"/api/v1/tickets", token, nil, http.StatusOK, &page)
	after := scrapeReplica(t, base)
	if after.replica <= before.replica {
		t.Errorf("with the standby caught up a list ran on the primary (replica reads %d → %d)", before.replica, after.replica)
	}
	if len(page.Tickets) != rounds {
		t.Errorf("the list from the caught-up standby has %d tickets, want %d", len(page.Tickets), rounds)
	}
	reportHA(t, "read replica: %d rounds of write then read (search, history, comments) with the standby's replay paused: "+
		"misses %d, standby held %d of the new tickets, reads served by the primary %d, by the standby %d, lag gauge %.2f s; "+
		"after resuming, a list ran on the standby (standby reads %d → %d)",
		rounds, misses, heldByStandby, lagging.primary, lagging.replica, lagging.lag, before.replica, after.replica)
}

// replicaFigures are the read replica's series on /metrics.
type replicaFigures struct {
	lag              float64
	replica, primary int
}

func scrapeReplica(tb testing.TB, base string) replicaFigures {
	tb.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	f := replicaFigures{lag: -1}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch name {
		case "ticketd_replica_lag_seconds":
			f.lag = v
		case `ticketd_replica_reads_total{served_by="replica"}`:
			f.replica = int(v)
		case `ticketd_replica_reads_total{served_by="primary"}`:
			f.primary = int(v)
		}
	}
	return f
}
