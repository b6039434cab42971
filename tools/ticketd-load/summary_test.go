package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	t.Parallel()
	hundred := make([]time.Duration, 100) // 1ms..100ms
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value is every percentile", []time.Duration{7}, 99, 7},
		{"p50 of 1..100", hundred, 50, 50 * time.Millisecond},
		{"p90 of 1..100", hundred, 90, 90 * time.Millisecond},
		{"p99 of 1..100", hundred, 99, 99 * time.Millisecond},
		{"p100 is the max", hundred, 100, 100 * time.Millisecond},
		{"p0 is the min", hundred, 0, 1 * time.Millisecond},
		// Nearest rank: ceil(0.5*4)=2nd value, no interpolation.
		{"p50 of four", []time.Duration{1, 2, 3, 4}, 50, 2},
		{"p99 of four", []time.Duration{1, 2, 3, 4}, 99, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
}

func TestSummarizeLatencySortsFirst(t *testing.T) {
	t.Parallel()
	ds := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	got := summarizeLatency(ds)
	want := latency{N: 10, P50: 5, P90: 9, P99: 10, Max: 10}
	if got != want {
		t.Errorf("summarizeLatency = %+v, want %+v", got, want)
	}
	if got := summarizeLatency(nil); got != (latency{}) {
		t.Errorf("summarizeLatency(nil) = %+v, want zero", got)
	}
}

// ok builds a successful sample of op i answering with ticket.
func ok(i int, ticket string, wasReplay bool, id string, d time.Duration) sample {
	s := sample{op: i, outcome: created, ticketID: ticket, opID: id, dur: d}
	if wasReplay {
		s.outcome, s.resend = replayed, true
	}
	return s
}

func ops(ids ...string) []createArgs {
	out := make([]createArgs, len(ids))
	for i, id := range ids {
		out[i] = createArgs{OperationID: id}
	}
	return out
}

func TestSummarizeCountsAndRates(t *testing.T) {
	t.Parallel()
	res := &result{
		wall: 2 * time.Second,
		workers: []workerResult{
			{
				ops: ops("a", "b"),
				samples: []sample{
					ok(0, "T1", false, "a", 4*time.Millisecond),
					ok(0, "T1", true, "a", 1*time.Millisecond),
					{op: 1, outcome: timedOut},
					ok(1, "T2", true, "b", 2*time.Millisecond), // the timed-out create had committed
					{op: 1, outcome: toolError, code: "operation_in_progress", resend: true},
				},
			},
			{
				ops: ops("c"),
				samples: []sample{
					ok(0, "T3", false, "c", 6*time.Millisecond),
					{op: 0, outcome: toolError, code: "unavailable"},
					{op: 0, outcome: interrupted},
				},
			},
		},
	}
	s := summarize(&config{URL: "u", Project: "p", Workers: 2}, res)
	if s.Calls != 8 || s.Created != 2 || s.Replayed != 2 || s.Timeouts != 1 || s.Interrupted != 1 || s.Resent != 3 {
		t.Errorf("counts = %+v", s)
	}
	if s.ToolErrors["operation_in_progress"] != 1 || s.ToolErrors["unavailable"] != 1 || len(s.ToolErrors) != 2 {
		t.Errorf("tool errors = %v", s.ToolErrors)
	}
	if got := s.rate(s.Calls); got != 4 {
		t.Errorf("calls/s = %v, want 4", got)
	}
	if s.Create != (latency{N: 2, P50: 4 * time.Millisecond, P90: 6 * time.Millisecond, P99: 6 * time.Millisecond, Max: 6 * time.Millisecond}) {
		t.Errorf("create latency = %+v", s.Create)
	}
	if s.Replay.N != 2 || s.Replay.Max != 2*time.Millisecond || s.Replay.P50 != time.Millisecond {
		t.Errorf("replay latency = %+v", s.Replay)
	}
	v := s.Invariant
	if !v.OK() || v.SucceededOps != 3 || v.DistinctTickets != 3 || v.CreatedOps != 2 {
		t.Errorf("invariant = %+v, want ok with 3 ops, 3 tickets, 2 created", v)
	}
	// Two tool errors fail the run even though the invariant holds.
	if err := s.verdict(); err == nil || !strings.Contains(err.Error(), "2 calls failed") {
		t.Errorf("verdict = %v, want 2 calls failed", err)
	}
}

func TestTimeoutsAloneAreClean(t *testing.T) {
	t.Parallel()
	res := &result{wall: time.Second, workers: []workerResult{{
		ops:     ops("a"),
		samples: []sample{{op: 0, outcome: timedOut}, ok(0, "T1", true, "a", 1)},
	}}}
	if err := summarize(&config{}, res).verdict(); err != nil {
		t.Errorf("verdict = %v, want nil", err)
	}
}

func TestInvariantViolations(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		w     workerResult
		check func(invariant) bool
	}{
		{"replay returns another ticket", workerResult{
			ops: ops("a"), samples: []sample{ok(0, "T1", false, "a", 1), ok(0, "T2", true, "a", 1)},
		}, func(v invariant) bool { return v.ReplayMismatches == 1 && v.DistinctTickets == 2 }},
		{"one id created twice", workerResult{
			ops: ops("a"), samples: []sample{ok(0, "T1", false, "a", 1), ok(0, "T1", false, "a", 1)},
		}, func(v invariant) bool { return v.DuplicateCreates == 1 }},
		{"two ids share a ticket", workerResult{
			ops: ops("a", "b"), samples: []sample{ok(0, "T1", false, "a", 1), ok(1, "T1", false, "b", 1)},
		}, func(v invariant) bool { return v.SucceededOps == 2 && v.DistinctTickets == 1 }},
		{"answer echoes another id", workerResult{
			ops: ops("a"), samples: []sample{ok(0, "T1", false, "b", 1)},
		}, func(v invariant) bool { return v.EchoMismatches == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := summarize(&config{}, &result{wall: time.Second, workers: []workerResult{tt.w}})
			v := s.Invariant
			if v.OK() || !tt.check(v) || len(v.Examples) == 0 {
				t.Errorf("invariant = %+v", v)
			}
			if err := s.verdict(); err == nil || !strings.Contains(err.Error(), "invariant violated") {
				t.Errorf("verdict = %v, want invariant violated", err)
			}
		})
	}
}

func TestReports(t *testing.T) {
	t.Parallel()
	s := summarize(&config{URL: "http://127.0.0.1:1/mcp", Project: "support", Workers: 1}, &result{
		wall: time.Second,
		workers: []workerResult{{
			ops:     ops("a"),
			samples: []sample{ok(0, "T1", false, "a", 1500*time.Microsecond), {op: 0, outcome: toolError, code: "internal"}},
		}},
	})
	var text bytes.Buffer
	if err := writeText(&text, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 in 1s: 2.0 calls/s, 1.0 creates/s, 0.0 replays/s", "internal=1", "1.50ms", "invariant  OK"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	var out bytes.Buffer
	if err := writeJSON(&out, s); err != nil {
		t.Fatal(err)
	}
	var j jsonSummary
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if j.Calls != 2 || j.Latency.Create.P50MS != 1.5 || j.ToolErrors["internal"] != 1 || !j.Invariant.OK || j.Errors == nil {
		t.Errorf("json report = %+v", j)
	}
}

// TestCheckWritesCatchesABrokenContract: a write replayed with another
// change, or applied twice, or two IDs answering one change, is a violation.
func TestCheckWritesCatchesABrokenContract(t *testing.T) {
	t.Parallel()
	write := func(i int, outcome outcome, ticket, result, id string) sample {
		return sample{op: i, write: true, outcome: outcome, ticketID: ticket, result: result, opID: id}
	}
	writes := []writeArgs{{tool: toolUpdate, OperationID: "a"}, {tool: toolUpdate, OperationID: "b"}}
	tests := map[string][]sample{
		"ReplayAnswersAnotherVersion": {write(0, applied, "T1", "2", "a"), write(0, replayed, "T1", "3", "a")},
		"AppliedTwice":                {write(0, applied, "T1", "2", "a"), write(0, applied, "T1", "2", "a")},
		"TwoIDsOneChange":             {write(0, applied, "T1", "2", "a"), write(1, applied, "T1", "2", "b")},
	}
	for name, samples := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if v := checkInvariant([]workerResult{{writes: writes, samples: samples}}); v.OK() {
				t.Errorf("invariant = %+v, want violated", v)
			}
		})
	}
	good := []sample{write(0, applied, "T1", "2", "a"), write(0, replayed, "T1", "2", "a"), write(1, applied, "T1", "3", "b")}
	if v := checkInvariant([]workerResult{{writes: writes, samples: good}}); !v.OK() || v.WriteOps != 2 || v.DistinctChanges != 2 {
		t.Errorf("invariant = %+v, want OK with 2 writes and 2 changes", v)
	}
}

// TestExpectedRateLimitsAreNotFailures: with -expect-rate-limited a flood's
// rate_limited answers pass, and any other failure still fails the run.
func TestExpectedRateLimitsAreNotFailures(t *testing.T) {
	t.Parallel()
	res := func() *result {
		return &result{wall: time.Second, workers: []workerResult{{
			ops:     ops("a"),
			samples: []sample{ok(0, "T1", false, "a", 1), {op: 0, outcome: toolError, code: "rate_limited"}},
		}}}
	}
	if err := summarize(&config{ExpectRateLimited: true}, res()).verdict(); err != nil {
		t.Errorf("expected rate_limited: verdict = %v, want nil", err)
	}
	if err := summarize(&config{}, res()).verdict(); err == nil || !strings.Contains(err.Error(), "1 calls failed") {
		t.Errorf("unexpected rate_limited: verdict = %v, want 1 calls failed", err)
	}
	r := res()
	r.workers[0].samples = append(r.workers[0].samples, sample{op: 0, outcome: toolError, code: "unavailable"})
	if err := summarize(&config{ExpectRateLimited: true}, r).verdict(); err == nil || !strings.Contains(err.Error(), "1 calls failed") {
		t.Errorf("unavailable beside expected rate_limited: verdict = %v, want 1 calls failed", err)
	}
}

// TestBearerNotesHTTPRefusals: a 429 whose JSON-RPC error carries the
// contract error is noted under its code for the call, and its body stays
// readable for the SDK.
func TestBearerNotesHTTPRefusals(t *testing.T) {
	t.Parallel()
	const body = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"rate_limited: …","data":{"code":"rate_limited","retryable":true,"retry_after_ms":1000}}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	note := new(string)
	req, _ := http.NewRequestWithContext(context.WithValue(t.Context(), refusalKey{}, note), http.MethodPost, srv.URL, nil)
	resp, err := bearer{token: "t", next: http.DefaultTransport}.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	if *note != "rate_limited" || string(got) != body {
		t.Errorf("noted %q, body %q; want rate_limited and the body unchanged", *note, got)
	}
}
