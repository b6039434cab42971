package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// summary is everything a run reports.
type summary struct {
	URL        string
	Project    string
	Workers    int
	RetryRatio float64
	Wall       time.Duration

	Calls       int
	Resent      int // calls that re-sent an earlier operation_id
	Created     int
	Replayed    int
	Applied     int // fresh update_ticket and add_comment successes
	Answered    int // successes of a -tool other than create_ticket
	Timeouts    int
	Transport   int
	Malformed   int
	Interrupted int
	ToolErrors  map[string]int // by error.code
	// RateLimitedExpected is -expect-rate-limited: rate_limited answers
	// are the point of the run (a flood), not failures.
	RateLimitedExpected bool `json:",omitempty"`
	Reconnects          int
	Stopped             int      // workers that stopped early: a lost session that would not reconnect
	Errors              []string // a few distinct transport and worker errors, for diagnosis

	Create, Replay latency
	Write          latency // fresh updates and comments
	All            latency // every success, whatever the tool
	Invariant      invariant

	// Server is the server's usage over the window, when -server-pid was
	// given; its err says why the numbers are missing.
	ServerPID int
	Server    serverUsage
	// Machine is the whole machine's CPU over the window (zero when /proc
	// could not be read).
	Machine machineUsage
}

// databaseCPUPerCall is PostgreSQL's CPU time per call in the window.
func (s summary) databaseCPUPerCall() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Machine.database / time.Duration(s.Calls)
}

// generatorCPUPerCall is the load generator's own CPU time per call in the
// window: on one machine, a share of the cores the server did not get.
func (s summary) generatorCPUPerCall() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Machine.generator / time.Duration(s.Calls)
}

// machineBusy is the share of the machine's CPU time that was busy in the
// window, 0 to 1.
func (s summary) machineBusy() float64 {
	if s.Machine.total <= 0 {
		return 0
	}
	return float64(s.Machine.busy) / float64(s.Machine.total)
}

// cpuPerCall is the server's CPU time per call in the window.
func (s summary) cpuPerCall() time.Duration {
	if s.Calls == 0 {
		return 0
	}
	return s.Server.cpu / time.Duration(s.Calls)
}

// latency summarises one class of durations.
type latency struct {
	N                  int
	P50, P90, P99, Max time.Duration
}

// invariant is the retry contract checked on what the server answered.
type invariant struct {
	SucceededOps     int // distinct operation_ids with at least one success
	DistinctTickets  int // distinct ticket_ids returned
	CreatedOps       int // distinct operation_ids answered with replayed: false
	ReplayMismatches int // successes whose ticket_id differs from that ID's first one
	DuplicateCreates int // operation_ids answered replayed: false more than once
	EchoMismatches   int // successes echoing another operation_id
	// Writes (update_ticket, add_comment): operation_ids with a success,
	// the distinct changes (version or comment) they answered, and those
	// answered replayed: false more than once.
	WriteOps, DistinctChanges, DuplicateWrites int
	Examples                                   []string
}

// OK reports whether the contract held: one ticket per operation_id, the
// same one on every answer, created once.
func (v invariant) OK() bool {
	return v.SucceededOps == v.DistinctTickets && v.ReplayMismatches == 0 &&
		v.DuplicateCreates == 0 && v.EchoMismatches == 0 &&
		v.WriteOps == v.DistinctChanges && v.DuplicateWrites == 0
}

const maxExamples = 5

// summarize merges the workers' samples. It runs once, after the workers
// have stopped, which is why the samples could be gathered without locks.
// In a windowed run only the calls that ended inside the window count; the
// invariant is checked on every call, warm-up included.
func summarize(cfg *config, res *result) summary {
	s := summary{
		URL: cfg.URL, Project: cfg.Project, Workers: cfg.Workers, RetryRatio: cfg.RetryRatio,
		Wall: res.wall, ToolErrors: map[string]int{}, ServerPID: cfg.ServerPID, Server: res.server,
		Machine:             res.machine,
		RateLimitedExpected: cfg.ExpectRateLimited,
	}
	var creates, replays, writes, all []time.Duration
	for _, w := range res.workers {
		s.Reconnects += w.reconnects
		if w.err != nil {
			s.Stopped++
			s.addError(w.err.Error())
		}
		for _, c := range w.samples {
			if cfg.windowed() && (c.end.Before(res.windowStart) || c.end.After(res.windowEnd)) {
				continue
			}
			s.count(c)
			switch c.outcome {
			case created:
				creates = append(creates, c.dur)
			case replayed:
				replays = append(replays, c.dur)
			case applied:
				writes = append(writes, c.dur)
			}
			if c.outcome == created || c.outcome == replayed || c.outcome == applied || c.outcome == answered {
				all = append(all, c.dur)
			}
		}
	}
	s.Create, s.Replay, s.All = summarizeLatency(creates), summarizeLatency(replays), summarizeLatency(all)
	s.Write = summarizeLatency(writes)
	s.Invariant = checkInvariant(res.workers)
	return s
}

func (s *summary) count(c sample) {
	s.Calls++
	if c.resend {
		s.Resent++
	}
	switch c.outcome {
	case created:
		s.Created++
	case replayed:
		s.Replayed++
	case applied:
		s.Applied++
	case answered:
		s.Answered++
	case toolError:
		s.ToolErrors[c.code]++
	case malformed:
		s.Malformed++
		s.addError(c.err.Error())
	case timedOut:
		s.Timeouts++
	case transport:
		s.Transport++
		s.addError(c.err.Error())
	case interrupted:
		s.Interrupted++
	}
}

func (s *summary) addError(msg string) {
	if len(s.Errors) < maxExamples && !slices.Contains(s.Errors, msg) {
		s.Errors = append(s.Errors, msg)
	}
}

// failures counts calls that failed for a reason other than a client-side
// timeout or the run being interrupted.
func (s summary) failures() int {
	n := s.Transport + s.Malformed
	for code, c := range s.ToolErrors {
		if code != "rate_limited" || !s.RateLimitedExpected {
			n += c
		}
	}
	return n
}

// verdict is the run's exit status as an error: nil for a clean run.
func (s summary) verdict() error {
	var errs []error
	if !s.Invariant.OK() {
		errs = append(errs, errors.New("invariant violated"))
	}
	if n := s.failures(); n > 0 {
		errs = append(errs, fmt.Errorf("%d calls failed", n))
	}
	if err := s.configured(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// configured is nil when the load ran as its flags describe, and otherwise
// a notAsConfigured saying how it fell short: workers that stopped early
// (their sessions lost and not regained), or a server whose CPU and memory
// were asked for and could not be read. Session set-up failures stop the
// run before there is a summary (connectAll).
func (s summary) configured() error {
	var errs []error
	if s.Stopped > 0 {
		errs = append(errs, fmt.Errorf("%d of %d workers stopped early", s.Stopped, s.Workers))
	}
	if s.ServerPID > 0 && s.Server.err != nil {
		errs = append(errs, fmt.Errorf("server %d not measured: %w", s.ServerPID, s.Server.err))
	}
	if len(errs) == 0 {
		return nil
	}
	return notAsConfigured{errors.Join(errs...)}
}

// rate is n per second of wall time.
func (s summary) rate(n int) float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(n) / s.Wall.Seconds()
}

// summarizeLatency sorts ds in place and reads its percentiles.
func summarizeLatency(ds []time.Duration) latency {
	slices.Sort(ds)
	l := latency{N: len(ds), P50: percentile(ds, 50), P90: percentile(ds, 90), P99: percentile(ds, 99)}
	if len(ds) > 0 {
		l.Max = ds[len(ds)-1]
	}
	return l
}

// percentile is the nearest-rank percentile of sorted: the smallest value
// with at least p% of the values at or below it. Nearest rank never
// interpolates, so every reported latency is one that was measured.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// checkInvariant walks every success in call order. Each worker only
// replays its own operation_ids, so its samples are in order per ID.
func checkInvariant(workers []workerResult) invariant {
	var v invariant
	first := map[string]string{}     // operation_id → ticket_id of its first success
	createdOnce := map[string]bool{} // operation_ids answered replayed: false
	tickets := map[string]struct{}{}
	for _, w := range workers {
		for _, c := range w.samples {
			if c.write || (c.outcome != created && c.outcome != replayed) {
				continue
			}
			v.checkOne(w.ops[c.op].OperationID, c, first, createdOnce)
			tickets[c.ticketID] = struct{}{}
		}
	}
	v.SucceededOps, v.DistinctTickets, v.CreatedOps = len(first), len(tickets), len(createdOnce)
	if v.SucceededOps != v.DistinctTickets {
		v.example(fmt.Sprintf("%d operation_ids succeeded but %d distinct ticket_ids came back", v.SucceededOps, v.DistinctTickets))
	}
	v.checkWrites(workers)
	return v
}

func (v *invariant) checkOne(id string, c sample, first map[string]string, createdOnce map[string]bool) {
	if c.opID != id {
		v.EchoMismatches++
		v.example(fmt.Sprintf("sent operation_id %s, answer names %s", id, c.opID))
	}
	if t, seen := first[id]; !seen {
		first[id] = c.ticketID
	} else if t != c.ticketID {
		v.ReplayMismatches++
		v.example(fmt.Sprintf("operation_id %s: ticket %s first, then %s", id, t, c.ticketID))
	}
	if c.outcome == created {
		if createdOnce[id] {
			v.DuplicateCreates++
			v.example(fmt.Sprintf("operation_id %s: created twice", id))
		}
		createdOnce[id] = true
	}
}

func (v *invariant) example(msg string) {
	if len(v.Examples) < maxExamples {
		v.Examples = append(v.Examples, msg)
	}
}
