package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestLoadAgainstRealServer runs the generator against the real HTTP stack
// and checks its invariant against the database itself.
func TestLoadAgainstRealServer(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", "tickets:read", "tickets:write")

	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-project", "support",
		"-requests", "200", "-workers", "4", "-retry-ratio", "0.3", "-duration", "2m", "-timeout", "30s", "-json"}
	err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got jsonSummary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decode %q: %v", stdout.String(), err)
	}
	if got.Calls != 200 {
		t.Errorf("calls = %d, want the -requests cap of 200", got.Calls)
	}
	if !got.Invariant.OK || got.Invariant.SucceededOps != got.Invariant.DistinctTickets {
		t.Errorf("invariant = %+v", got.Invariant)
	}
	if got.Replayed == 0 || got.Latency.Replay.N != got.Replayed {
		t.Errorf("replayed = %d, replay latency n = %d: want replays, all measured", got.Replayed, got.Latency.Replay.N)
	}
	if got.Created+got.Replayed != got.Calls {
		t.Errorf("created %d + replayed %d != calls %d (errors: %v, timeouts %d)",
			got.Created, got.Replayed, got.Calls, got.ToolErrors, got.Timeouts)
	}
	if n := env.CountTickets(t, "acme"); n != int64(got.Invariant.CreatedOps) {
		t.Errorf("tickets in the database = %d, distinct created operation_ids = %d", n, got.Invariant.CreatedOps)
	}
}

// TestLoadMixAgainstRealServer mixes updates and comments into the load
// and checks, against the database, one change per write operation_id:
// every write leaves one event beyond the tickets' created ones, and the
// writes that succeeded are exactly that many.
func TestLoadMixAgainstRealServer(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", "tickets:read", "tickets:write")

	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-requests", "300", "-workers", "4",
		"-retry-ratio", "0.3", "-update-ratio", "0.35", "-comment-ratio", "0.35", "-duration", "2m", "-timeout", "30s", "-json"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got jsonSummary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decode %q: %v", stdout.String(), err)
	}
	v := got.Invariant
	if !v.OK || v.WriteOps == 0 || got.Applied != v.WriteOps || got.Latency.Write.N != got.Applied {
		t.Errorf("invariant = %+v, applied = %d, write latency n = %d: want writes, each applied once and measured",
			v, got.Applied, got.Latency.Write.N)
	}
	if got.Created+got.Applied+got.Replayed != got.Calls {
		t.Errorf("created %d + applied %d + replayed %d != calls %d (errors: %v, timeouts %d)",
			got.Created, got.Applied, got.Replayed, got.Calls, got.ToolErrors, got.Timeouts)
	}
	events, tickets := dbtest.CountRows(t, env.DB, "ticket_events", "acme"), env.CountTickets(t, "acme")
	if events-tickets != int64(v.WriteOps) {
		t.Errorf("%d events beyond the %d created ones, want one per write operation_id (%d)", events-tickets, tickets, v.WriteOps)
	}
}

// TestToolModeCountsOnlyTheWindow calls a read tool after a warm-up and
// reads the server's /proc (the server runs in this test's process).
func TestToolModeCountsOnlyTheWindow(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("server usage comes from /proc")
	}
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", "tickets:read")

	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-tool", "list_tickets", "-args", `{"limit":5}`,
		"-workers", "2", "-warmup", "200ms", "-duration", "500ms", "-server-pid", strconv.Itoa(os.Getpid()), "-json"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got jsonSummary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decode %q: %v", stdout.String(), err)
	}
	if got.Answered == 0 || got.Answered != got.Calls || got.Created != 0 || got.Latency.All.N != got.Answered {
		t.Errorf("calls %d, answered %d, created %d, latency n %d: want only answered calls, all measured",
			got.Calls, got.Answered, got.Created, got.Latency.All.N)
	}
	if got.Server == nil || got.Server.Error != "" || got.Server.PeakRSSBytes <= 0 {
		t.Errorf("server = %+v, want usage read from /proc", got.Server)
	}
}

func TestToolModeCountsToolErrorsAsFailures(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	token := env.Token(t, "acme", "tickets:read")
	var stdout, stderr bytes.Buffer
	// The tenant has no such ticket: every call is an isError result.
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-tool", "get_ticket",
		"-args", `{"id":"SUP-1"}`, "-workers", "1", "-requests", "3", "-duration", "1m", "-json"}
	err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "3 calls failed") {
		t.Errorf("run = %v, want 3 failed calls\nstdout: %s", err, stdout.String())
	}
}

// TestIdenticalCreatesMakeOneTicket sends one operation_id from every
// worker at once (-operation-id), as the edge measurement's burst does, on
// PostgreSQL: one call creates, every other replays that ticket, and the
// database holds one.
func TestIdenticalCreatesMakeOneTicket(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.Postgres(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", "tickets:read", "tickets:write")

	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-operation-id", "0b6f3c52-7d51-4a53-9c43-1d7f0e0a2b11",
		"-workers", "8", "-requests", "8", "-retry-ratio", "0", "-duration", "1m", "-timeout", "30s", "-json"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var got jsonSummary
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("decode %q: %v", stdout.String(), err)
	}
	if got.Created != 1 || got.Replayed != 7 || !got.Invariant.OK || got.Invariant.DistinctTickets != 1 {
		t.Errorf("created %d, replayed %d, invariant %+v: want one create and seven replays of it", got.Created, got.Replayed, got.Invariant)
	}
	if n := env.CountTickets(t, "acme"); n != 1 {
		t.Errorf("tickets in the database = %d, want 1", n)
	}
}
