package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestConnectFailureIsNotAsConfigured: sessions that cannot be opened end
// the run as "not as configured" (exit status 3), the class a script must
// never mistake for calls that failed under a load that did run.
func TestConnectFailureIsNotAsConfigured(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", "http://" + addr + "/mcp", "-token", "t", "-workers", "3", "-duration", "1s"}
	err = run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr)
	if !errors.As(err, new(notAsConfigured)) {
		t.Errorf("run against a closed port = %v, want notAsConfigured", err)
	}
}

// TestStoppedWorkerIsNotAsConfigured: a worker that lost its session for
// good leaves a smaller load than the flags describe, and so does a server
// that was to be measured and could not be.
func TestStoppedWorkerIsNotAsConfigured(t *testing.T) {
	t.Parallel()
	stopped := &result{wall: time.Second, workers: []workerResult{
		{ops: ops("a"), samples: []sample{ok(0, "T1", false, "a", 1)}},
		{err: errors.New("reconnect: connection refused")},
	}}
	if err := summarize(&config{Workers: 2}, stopped).verdict(); !errors.As(err, new(notAsConfigured)) {
		t.Errorf("verdict with a stopped worker = %v, want notAsConfigured", err)
	}
	unmeasured := &result{wall: time.Second, server: serverUsage{err: errors.New("no such process")},
		workers: []workerResult{{ops: ops("a"), samples: []sample{ok(0, "T1", false, "a", 1)}}}}
	if err := summarize(&config{Workers: 1, ServerPID: 4242}, unmeasured).verdict(); !errors.As(err, new(notAsConfigured)) {
		t.Errorf("verdict with an unmeasured server = %v, want notAsConfigured", err)
	}
	clean := &result{wall: time.Second, workers: []workerResult{{ops: ops("a"), samples: []sample{ok(0, "T1", false, "a", 1)}}}}
	if err := summarize(&config{Workers: 1}, clean).verdict(); err != nil {
		t.Errorf("verdict of a clean run = %v, want nil", err)
	}
}

// TestWorkersSpreadOverProjects: with several -project IDs every worker
// files into its own one, round robin, and every project gets tickets.
func TestWorkersSpreadOverProjects(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	env := servertest.Start(t, d, servertest.Options{})
	env.SeedProject(t, "acme")
	if _, err := env.Service.CreateProject(context.Background(), "acme", tickets.Project{ID: "ops", Key: "OPS", Name: "Ops"}); err != nil {
		t.Fatal(err)
	}
	token := env.Token(t, "acme", "tickets:read", "tickets:write")
	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "-url", env.Endpoint, "-token", token, "-project", "support, ops",
		"-requests", "40", "-workers", "4", "-retry-ratio", "0", "-duration", "2m", "-timeout", "30s"}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	var perProject []struct {
		ProjectID string
		N         int64
	}
	if err := d.Gorm.Raw(`SELECT project_id, count(*) AS n FROM tickets WHERE tenant_id = 'acme' GROUP BY project_id ORDER BY project_id`).
		Scan(&perProject).Error; err != nil {
		t.Fatal(err)
	}
	if len(perProject) != 2 || perProject[0].N+perProject[1].N != 40 || perProject[0].N == 0 || perProject[1].N == 0 {
		t.Errorf("tickets per project = %+v, want 40 spread over ops and support", perProject)
	}
}
