package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// writeText prints the summary for people.
func writeText(w io.Writer, s summary) error {
	var b strings.Builder
	fmt.Fprintf(&b, "target     %s  project=%s  workers=%d  retry-ratio=%.2f\n", s.URL, s.Project, s.Workers, s.RetryRatio)
	fmt.Fprintf(&b, "calls      %d in %s: %.1f calls/s, %.1f creates/s, %.1f replays/s\n",
		s.Calls, s.Wall.Round(time.Millisecond), s.rate(s.Calls), s.rate(s.Created), s.rate(s.Replayed))
	fmt.Fprintf(&b, "outcomes   created %d, updated or commented %d, replayed %d (re-sent %d), answered %d, timeouts %d, transport errors %d, malformed %d, interrupted %d\n",
		s.Created, s.Applied, s.Replayed, s.Resent, s.Answered, s.Timeouts, s.Transport, s.Malformed, s.Interrupted)
	fmt.Fprintf(&b, "errors     %s\n", formatCodes(s.ToolErrors))
	if s.Reconnects > 0 || s.Stopped > 0 {
		fmt.Fprintf(&b, "sessions   %d reconnects, %d workers stopped early\n", s.Reconnects, s.Stopped)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(&b, "  e.g.     %s\n", e)
	}
	fmt.Fprintf(&b, "latency    %8s %9s %9s %9s %9s\n", "n", "p50", "p90", "p99", "max")
	writeLatencyRow(&b, "  create", s.Create)
	writeLatencyRow(&b, "  write", s.Write)
	writeLatencyRow(&b, "  replay", s.Replay)
	writeLatencyRow(&b, "  all", s.All)
	switch {
	case s.ServerPID == 0:
	case s.Server.err != nil:
		fmt.Fprintf(&b, "server     pid %d: %v\n", s.ServerPID, s.Server.err)
	default:
		fmt.Fprintf(&b, "server     pid %d: CPU %s in the window, %s per call, peak RSS %.1f MiB\n",
			s.ServerPID, s.Server.cpu, ms(s.cpuPerCall()), mib(s.Server.peakRSS))
	}
	writeInvariant(&b, s.Invariant)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeLatencyRow(b *strings.Builder, name string, l latency) {
	if l.N == 0 {
		fmt.Fprintf(b, "%-10s %8d %9s %9s %9s %9s\n", name, 0, "-", "-", "-", "-")
		return
	}
	fmt.Fprintf(b, "%-10s %8d %9s %9s %9s %9s\n", name, l.N, ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max))
}

func writeInvariant(b *strings.Builder, v invariant) {
	verdict := "OK"
	if !v.OK() {
		verdict = "VIOLATED"
	}
	fmt.Fprintf(b, "invariant  %s: %d operation_ids succeeded, %d distinct ticket_ids (%d created), %d replay mismatches, %d duplicate creates, %d echo mismatches\n",
		verdict, v.SucceededOps, v.DistinctTickets, v.CreatedOps, v.ReplayMismatches, v.DuplicateCreates, v.EchoMismatches)
	if v.WriteOps > 0 {
		fmt.Fprintf(b, "           writes: %d operation_ids succeeded, %d distinct changes (versions or comments), %d applied twice\n",
			v.WriteOps, v.DistinctChanges, v.DuplicateWrites)
	}
	for _, e := range v.Examples {
		fmt.Fprintf(b, "  e.g.     %s\n", e)
	}
}

// ms formats a duration in milliseconds with fixed precision, so the
// columns line up and compare at a glance.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// formatCodes lists error codes in a stable order.
func formatCodes(codes map[string]int) string {
	if len(codes) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(codes))
	for _, code := range slices.Sorted(maps.Keys(codes)) {
		parts = append(parts, fmt.Sprintf("%s=%d", code, codes[code]))
	}
	return strings.Join(parts, ", ")
}

// jsonSummary is the machine-readable form: durations in milliseconds,
// rates per second, snake_case names.
type jsonSummary struct {
	URL             string         `json:"url"`
	Project         string         `json:"project"`
	Workers         int            `json:"workers"`
	RetryRatio      float64        `json:"retry_ratio"`
	WallMS          float64        `json:"wall_ms"`
	Calls           int            `json:"calls"`
	CallsPerSec     float64        `json:"calls_per_sec"`
	CreatesPerSec   float64        `json:"creates_per_sec"`
	ReplaysPerSec   float64        `json:"replays_per_sec"`
	Resent          int            `json:"resent"`
	Created         int            `json:"created"`
	Replayed        int            `json:"replayed"`
	Applied         int            `json:"applied"`
	Answered        int            `json:"answered"`
	Timeouts        int            `json:"timeouts"`
	TransportErrors int            `json:"transport_errors"`
	Malformed       int            `json:"malformed"`
	Interrupted     int            `json:"interrupted"`
	ToolErrors      map[string]int `json:"tool_errors"`
	Reconnects      int            `json:"reconnects"`
	StoppedWorkers  int            `json:"stopped_workers"`
	Errors          []string       `json:"errors"`
	Latency         struct {
		Create jsonLatency `json:"create"`
		Write  jsonLatency `json:"write"`
		Replay jsonLatency `json:"replay"`
		All    jsonLatency `json:"all"`
	} `json:"latency"`
	Invariant jsonInvariant `json:"invariant"`
	Server    *jsonServer   `json:"server,omitempty"`
}

// jsonServer is the server's usage over the window, when -server-pid was
// given; Error replaces the numbers when /proc could not be read.
type jsonServer struct {
	PID          int     `json:"pid"`
	CPUMS        float64 `json:"cpu_ms,omitempty"`
	CPUPerCallMS float64 `json:"cpu_per_call_ms,omitempty"`
	PeakRSSBytes int64   `json:"peak_rss_bytes,omitempty"`
	Error        string  `json:"error,omitempty"`
}

type jsonLatency struct {
	N     int     `json:"n"`
	P50MS float64 `json:"p50_ms"`
	P90MS float64 `json:"p90_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
}

type jsonInvariant struct {
	OK               bool     `json:"ok"`
	SucceededOps     int      `json:"succeeded_operation_ids"`
	DistinctTickets  int      `json:"distinct_ticket_ids"`
	CreatedOps       int      `json:"created_operation_ids"`
	ReplayMismatches int      `json:"replay_mismatches"`
	DuplicateCreates int      `json:"duplicate_creates"`
	EchoMismatches   int      `json:"echo_mismatches"`
	WriteOps         int      `json:"write_operation_ids"`
	DistinctChanges  int      `json:"distinct_changes"`
	DuplicateWrites  int      `json:"duplicate_writes"`
	Examples         []string `json:"examples"`
}

// writeJSON prints the summary as one JSON object.
func writeJSON(w io.Writer, s summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(toJSON(s))
}

func toJSON(s summary) jsonSummary {
	j := jsonSummary{
		URL: s.URL, Project: s.Project, Workers: s.Workers, RetryRatio: s.RetryRatio,
		WallMS: msFloat(s.Wall), Calls: s.Calls,
		CallsPerSec: s.rate(s.Calls), CreatesPerSec: s.rate(s.Created), ReplaysPerSec: s.rate(s.Replayed),
		Resent: s.Resent, Created: s.Created, Replayed: s.Replayed, Applied: s.Applied, Answered: s.Answered, Timeouts: s.Timeouts,
		TransportErrors: s.Transport, Malformed: s.Malformed, Interrupted: s.Interrupted,
		ToolErrors: s.ToolErrors, Reconnects: s.Reconnects, StoppedWorkers: s.Stopped,
		Errors: nonNil(s.Errors),
	}
	j.Latency.Create, j.Latency.Replay, j.Latency.All = toJSONLatency(s.Create), toJSONLatency(s.Replay), toJSONLatency(s.All)
	j.Latency.Write = toJSONLatency(s.Write)
	if s.ServerPID > 0 {
		j.Server = &jsonServer{PID: s.ServerPID}
		if s.Server.err != nil {
			j.Server.Error = s.Server.err.Error()
		} else {
			j.Server.CPUMS, j.Server.CPUPerCallMS = msFloat(s.Server.cpu), msFloat(s.cpuPerCall())
			j.Server.PeakRSSBytes = s.Server.peakRSS
		}
	}
	v := s.Invariant
	j.Invariant = jsonInvariant{
		OK: v.OK(), SucceededOps: v.SucceededOps, DistinctTickets: v.DistinctTickets, CreatedOps: v.CreatedOps,
		ReplayMismatches: v.ReplayMismatches, DuplicateCreates: v.DuplicateCreates, EchoMismatches: v.EchoMismatches,
		WriteOps: v.WriteOps, DistinctChanges: v.DistinctChanges, DuplicateWrites: v.DuplicateWrites,
		Examples: nonNil(v.Examples),
	}
	return j
}

func toJSONLatency(l latency) jsonLatency {
	return jsonLatency{N: l.N, P50MS: msFloat(l.P50), P90MS: msFloat(l.P90), P99MS: msFloat(l.P99), MaxMS: msFloat(l.Max)}
}

func msFloat(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// nonNil makes empty lists encode as [] rather than null, which is easier
// on consumers such as jq.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
