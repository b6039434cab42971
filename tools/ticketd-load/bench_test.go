package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBenchSmokeAgainstNoop runs the whole bench driver for one short round
// of the floor scenario: it builds ticketd-noop, starts it as a separate
// process, loads it, reads its /proc, and prints the table. It keeps the
// harness from rotting without needing PostgreSQL.
func TestBenchSmokeAgainstNoop(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("the bench reads server CPU from /proc")
	}
	dir := t.TempDir()
	noop := filepath.Join(dir, "ticketd-noop")
	if out, err := exec.Command("go", "build", "-o", noop, "../ticketd-noop").CombinedOutput(); err != nil {
		t.Fatalf("build ticketd-noop: %v\n%s", err, out)
	}
	runsFile := filepath.Join(dir, "runs.json")
	var stdout, stderr bytes.Buffer
	args := []string{"ticketd-load", "bench", "-noop", noop, "-ticketd", "unused", "-scenarios", "noop",
		"-rounds", "1", "-warmup", "200ms", "-duration", "1s", "-workers", "2", "-json-out", runsFile}
	if err := run(context.Background(), args, func(string) string { return "" }, &stdout, &stderr); err != nil {
		t.Fatalf("bench: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "| go-sdk no-op tool, stateless (the floor) | ") {
		t.Errorf("no floor row in the table:\n%s", stdout.String())
	}
	data, err := os.ReadFile(runsFile)
	if err != nil {
		t.Fatal(err)
	}
	var runs []benchRun
	if err := json.Unmarshal(data, &runs); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	if len(runs) != 1 {
		t.Fatalf("runs = %+v, want one", runs)
	}
	r := runs[0]
	if r.Scenario != "noop" || r.Calls == 0 || r.Failures != 0 || r.P50MS <= 0 || r.P99MS < r.P50MS || r.RSSMiB <= 0 {
		t.Errorf("run = %+v: want calls, no failures, p99 >= p50 > 0 and a peak RSS", r)
	}
}

func TestBenchConfigRejectsBadKnobs(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"bench", "-rounds", "0"},
		{"bench", "-duration", "0s"},
		{"bench", "-workers", "0"},
		{"bench", "-seeds", "10k"},
		{"bench", "-list-seed", "5"},
		{"bench", "extra"},
	} {
		if _, err := parseBenchConfig(args, &bytes.Buffer{}); err == nil {
			t.Errorf("parseBenchConfig(%q) succeeded, want a usage error", args)
		}
	}
	cfg, err := parseBenchConfig([]string{"bench", "-scenarios", "list@10k", "-seeds", "10000"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := cfg.selected(); err != nil || len(sc) != 1 || sc[0].seed != 10000 || sc[0].tool != "list_tickets" {
		t.Errorf("selected = %+v, %v; want the list scenario over 10k tickets", sc, err)
	}
	cfg.Scenarios = nil // all of them
	if sc, err := cfg.selected(); err != nil || slices.ContainsFunc(sc, func(s scenario) bool { return s.ts }) {
		t.Errorf("selected = %+v, %v; want no TypeScript floor without -noop-ts", sc, err)
	}
	cfg.Scenarios = []string{"noop-ts"}
	if _, err := cfg.selected(); err == nil {
		t.Error("the TypeScript floor was selected without -noop-ts")
	}
	cfg.Scenarios = []string{"nope"}
	if _, err := cfg.selected(); err == nil {
		t.Error("an unknown scenario was accepted")
	}
}

func TestMedianAndTable(t *testing.T) {
	t.Parallel()
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	if got := median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	cfg := &benchConfig{Rounds: 2, Workers: 16, Seeds: []int64{10000, 1000000}}
	base := baseScenarios(1000)
	byName := func(name string) scenario {
		i := slices.IndexFunc(base, func(s scenario) bool { return s.name == name })
		return base[i]
	}
	scenarios := []scenario{byName("noop"), byName("noop-ts"), byName("create"), byName("create-16p"), byName("replay"),
		seededScenarios(10000)[0], seededScenarios(1000000)[0]}
	runs := []benchRun{
		{Scenario: "noop-ts", CallsPS: 600},
		{Scenario: "create-16p", CallsPS: 400},
		{Scenario: "replay", CallsPS: 660},
		{Scenario: "noop", CallsPS: 800, P50MS: 10, P99MS: 50, CPUMS: 1},
		{Scenario: "noop", CallsPS: 1000, P50MS: 20, P99MS: 60, CPUMS: 1.2},
		{Scenario: "create", CallsPS: 300, P50MS: 40, P99MS: 200, CPUMS: 2.6, DBCPUMS: 0.9, GenCPUMS: 0.5, Busy: 0.97, DBSeen: true},
		{Scenario: "create", CallsPS: 340, P50MS: 40, P99MS: 200, CPUMS: 2.6, DBCPUMS: 1.1, GenCPUMS: 0.7, Busy: 0.99, Failures: 1},
		{Scenario: "create@10k", CallsPS: 300},
		{Scenario: "create@1M", CallsPS: 270},
	}
	var out bytes.Buffer
	if err := writeBenchTable(&out, cfg, scenarios, runs, []time.Duration{90 * time.Millisecond, 140 * time.Millisecond, 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| go-sdk no-op tool, stateless (the floor) | 900 | 15.0 / 55.0 | 1.10 ms | — |",
		"| ticketd `create_ticket`, fresh IDs, one project | 320 | 40.0 / 200.0 | 2.60 ms | 1.00 ms | 0.60 ms | 98 % | 0.0 MiB | 1 |",
		"create/floor: 0.36×", "CPU per call, create/floor: 2.36×", "p99/p50, create: 5.0",
		"create at 1M vs 10k stored: 0.90×",
		"replay/floor: 0.73×", "replay/TypeScript floor: 1.10×", "TypeScript floor/go-sdk floor: 0.67×",
		"creates in one project/spread over 16: 0.80×",
		"cold start (exec → /healthz 200, existing PostgreSQL database): median 100 ms, min 90, max 140 over 3 starts",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
