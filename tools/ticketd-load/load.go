package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// outcome is what one call came to.
type outcome uint8

const (
	created     outcome = iota // success, replayed: false
	replayed                   // success, replayed: true
	toolError                  // isError result; code says which
	malformed                  // success without the fields the contract promises
	timedOut                   // the per-call timeout expired
	transport                  // the call failed below the tool layer
	interrupted                // the run was cancelled (signal) mid-call
	answered                   // success of a -tool other than create_ticket
	applied                    // update_ticket or add_comment success, replayed: false
)

// createArgs is create_ticket's input. A replay re-sends the same value, so
// the server sees the same fingerprint and must answer with the same ticket.
type createArgs struct {
	OperationID string   `json:"operation_id"`
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Priority    string   `json:"priority"`
	Labels      []string `json:"labels"`
}

// sample is one call. Samples stay in their worker's slice, in call order,
// until the run ends, so the hot path takes no locks.
type sample struct {
	op       int    // index into the worker's ops, or writes when write is set
	write    bool   // an update_ticket or add_comment
	result   string // what a write made: the version produced or the comment's ID
	resend   bool
	outcome  outcome
	dur      time.Duration
	end      time.Time // when the answer came, to place the call in the window
	code     string    // error code for toolError
	ticketID string
	opID     string // operation_id the server echoed
	err      error  // for transport and malformed, to show what went wrong
}

// workerResult is what one worker leaves behind.
type workerResult struct {
	ops        []createArgs
	writes     []writeArgs
	tickets    []string // tickets this worker created, for its writes
	samples    []sample
	reconnects int
	err        error     // why the worker stopped early, if it did
	end        time.Time // when its last call returned
}

// result is a whole run.
type result struct {
	workers []workerResult
	wall    time.Duration
	// window is when calls counted, if cfg.windowed(): from the end of the
	// warm-up to the end of the duration or of the last call, if sooner.
	windowStart, windowEnd time.Time
	// server is what /proc said about cfg.ServerPID over the window.
	server serverUsage
	// machine is what /proc said about the whole machine over the window.
	machine machineUsage
}

// generate connects every worker, runs them until the duration or request
// budget ends (or ctx is cancelled), and returns their samples.
func generate(ctx context.Context, cfg *config) (*result, error) {
	dial := dialer(cfg)
	sessions, err := connectAll(ctx, dial, cfg.Workers, connectTimeout(cfg))
	if err != nil {
		return nil, err
	}
	var budget *atomic.Int64
	if cfg.Requests > 0 {
		budget = new(atomic.Int64)
		budget.Store(int64(cfg.Requests))
	}
	// The duration only stops the issuing of calls; calls in flight finish
	// under their own timeout, so the last ones are measured, not cut short.
	issuing, stopIssuing := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration)
	defer stopIssuing()

	res := &result{workers: make([]workerResult, cfg.Workers)}
	start := time.Now()
	done := make(chan struct{})
	var meter sync.WaitGroup
	if cfg.windowed() {
		meter.Go(func() { res.measureWindow(cfg, start, done) })
	}
	var wg sync.WaitGroup
	for i, cs := range sessions {
		w := &worker{cfg: cfg, dial: dial, cs: cs, budget: budget, project: cfg.projects[i%len(cfg.projects)]}
		wg.Go(func() {
			res.workers[i] = w.run(ctx, issuing)
		})
	}
	wg.Wait()
	close(done)
	meter.Wait()
	res.wall = wallTime(start, res.workers)
	if cfg.windowed() {
		res.wall = res.windowEnd.Sub(res.windowStart)
	}
	return res, nil
}

// measureWindow marks the window's start and end, reading the server's CPU
// time at both. The end is the configured one, or sooner when the workers
// finish first (a -requests cap). A server that cannot be read leaves its
// error in res.server and the run goes on: the calls are still measured.
func (res *result) measureWindow(cfg *config, start time.Time, done <-chan struct{}) {
	var before time.Duration
	res.windowStart = start.Add(cfg.Warmup)
	select {
	case <-time.After(time.Until(res.windowStart)):
	case <-done:
		res.windowEnd = time.Now()
		return
	}
	if cfg.ServerPID > 0 {
		before, res.server.err = processCPU(cfg.ServerPID)
	}
	machineBefore, machineErr := takeMachineSnapshot()
	select {
	case <-time.After(time.Until(res.windowStart.Add(cfg.Duration))):
	case <-done:
	}
	res.windowEnd = time.Now()
	if machineAfter, err := takeMachineSnapshot(); err == nil && machineErr == nil {
		res.machine = machineAfter.since(machineBefore)
	}
	if cfg.ServerPID == 0 || res.server.err != nil {
		return
	}
	after, err := processCPU(cfg.ServerPID)
	if err == nil {
		res.server.cpu = after - before
		res.server.peakRSS, err = processPeakRSS(cfg.ServerPID)
	}
	res.server.err = err
}

// wallTime runs from the start to the last worker's last answer, leaving
// out the closing of sessions, which is not part of the create path.
func wallTime(start time.Time, workers []workerResult) time.Duration {
	end := start
	for _, w := range workers {
		if w.end.After(end) {
			end = w.end
		}
	}
	return end.Sub(start)
}

// dialer returns how a worker opens its MCP session.
func dialer(cfg *config) func(context.Context) (*mcp.ClientSession, error) {
	// One pool shared by all sessions, sized so each worker keeps its
	// connection alive; the default of 2 idle connections per host would
	// make most calls pay for a new TCP connection.
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = cfg.Workers
	// Straight to the checked address, never through an environment proxy.
	base.Proxy = nil
	httpClient := &http.Client{
		Transport: bearer{token: cfg.Token, next: base},
		// A redirect could lead past the loopback guard, and a load test
		// measures one endpoint anyway.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirects are not followed")
		},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ticketd-load", Version: "v0"}, nil)
	return func(ctx context.Context) (*mcp.ClientSession, error) {
		return client.Connect(ctx, &mcp.StreamableClientTransport{
			Endpoint:             cfg.URL,
			HTTPClient:           httpClient,
			DisableStandaloneSSE: true, // request/response only; no GET stream to hold open
			MaxRetries:           -1,   // a failed call must show as failed, not be re-sent by the SDK
		}, nil)
	}
}

// connectTimeout bounds opening a session. It is at least 10s, so that a
// -timeout chosen small to provoke call timeouts does not prevent the run.
func connectTimeout(cfg *config) time.Duration {
	return max(cfg.Timeout, 10*time.Second)
}

// connectAll opens n sessions in parallel before the clock starts, so
// connection set-up is not counted as create latency.
func connectAll(ctx context.Context, dial func(context.Context) (*mcp.ClientSession, error), n int, timeout time.Duration) ([]*mcp.ClientSession, error) {
	sessions := make([]*mcp.ClientSession, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			sessions[i], errs[i] = dialRetrying(cctx, dial)
		})
	}
	wg.Wait()
	failed := 0
	var first error
	for _, err := range errs {
		if err != nil {
			failed++
			first = cmp.Or(first, err)
		}
	}
	if failed == 0 {
		return sessions, nil
	}
	for _, cs := range sessions {
		if cs != nil {
			_ = cs.Close()
		}
	}
	// Usually every worker fails the same way; one message says it.
	return nil, notAsConfigured{fmt.Errorf("connect: %d of %d sessions failed, e.g.: %w", failed, n, first)}
}

// dialRetrying dials until a session opens or ctx ends, waiting 50 ms to
// 1 s (with jitter) between attempts: a server at a tenant's concurrency
// cap refuses a session's first request (429) while many open at once,
// and a load run must start with every worker it was asked for, or fail,
// never run quietly with fewer.
func dialRetrying(ctx context.Context, dial func(context.Context) (*mcp.ClientSession, error)) (*mcp.ClientSession, error) {
	wait := 50 * time.Millisecond
	for {
		cs, err := dial(ctx)
		if err == nil {
			return cs, nil
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait/2 + rand.N(wait)):
		}
		wait = min(2*wait, time.Second)
	}
}

// bearer adds the token to every request of a session.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	// RoundTrippers must not modify the caller's request.
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.next.RoundTrip(r)
	if note, ok := r.Context().Value(refusalKey{}).(*string); ok && err == nil &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		*note = refusalCode(resp)
	}
	return resp, err
}

// refusalKey carries, in a call's context, where bearer notes the contract
// code of an HTTP-level refusal: the SDK reports a 429 or 503 only as
// "rejected", without the JSON-RPC error the body carries.
type refusalKey struct{}

// refusalCode reads the contract code from a refusal's JSON-RPC error data
// ("(none)" without one) and leaves the body readable for the SDK.
func refusalCode(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)) // a short read leaves "(none)"
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Error struct {
			Data struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Error.Data.Code != "" {
		return msg.Error.Data.Code
	}
	return "(none)"
}

// worker is one sequential caller with its own session. Its replays only
// re-send its own operation_ids, so no two calls with one ID ever overlap
// and "operation_in_progress" can only follow a timed-out call.
type worker struct {
	cfg    *config
	dial   func(context.Context) (*mcp.ClientSession, error)
	cs     *mcp.ClientSession
	budget *atomic.Int64 // calls left in the whole run; nil: no cap
	// project is where this worker files its tickets.
	project string
	out     workerResult
}

// run calls until issuing is done; ctx bounds the calls themselves.
func (w *worker) run(ctx, issuing context.Context) workerResult {
	defer func() { _ = w.cs.Close() }()
	for issuing.Err() == nil && w.take() {
		if w.cfg.Tool != toolCreate {
			if s := w.callTool(ctx); !w.record(ctx, s) {
				break
			}
			continue
		}
		op, write, resend := w.next()
		var s sample
		if write {
			s = w.send(ctx, w.out.writes[op].tool, w.out.writes[op], classifyWrite)
			s.op, s.write = op, true
		} else {
			s = w.call(ctx, op)
			if s.outcome == created {
				w.out.tickets = append(w.out.tickets, s.ticketID)
			}
		}
		s.resend = resend
		if !w.record(ctx, s) {
			break
		}
	}
	w.out.end = time.Now()
	return w.out
}

// record keeps a sample and reconnects after a lost session; false means
// the worker cannot go on.
func (w *worker) record(ctx context.Context, s sample) bool {
	w.out.samples = append(w.out.samples, s)
	if s.outcome == transport && errors.Is(s.err, mcp.ErrConnectionClosed) {
		if err := w.reconnect(ctx); err != nil {
			w.out.err = err
			return false
		}
	}
	return true
}

// take claims one call from the shared budget.
func (w *worker) take() bool {
	return w.budget == nil || w.budget.Add(-1) >= 0
}

// next picks the operation to send: a replay of an earlier one (create or
// write) with probability RetryRatio, else a fresh one with a fresh UUID v4:
// an update or a comment on one of the worker's tickets at their ratios, or
// a create.
func (w *worker) next() (op int, write, resend bool) {
	creates, writes := len(w.out.ops), len(w.out.writes)
	if n := creates + writes; n > 0 && rand.Float64() < w.cfg.RetryRatio {
		i := rand.IntN(n)
		if i >= creates {
			return i - creates, true, true
		}
		return i, false, true
	}
	if wr, ok := w.cfg.newWrite(w.out.tickets); ok {
		w.out.writes = append(w.out.writes, wr)
		return len(w.out.writes) - 1, true, false
	}
	id := w.cfg.OperationID
	if id == "" {
		id = uuid.NewString()
	}
	w.out.ops = append(w.out.ops, createArgs{
		OperationID: id,
		ProjectID:   w.project,
		Title:       "load test " + id[:8],
		Priority:    "normal",
		Labels:      []string{"load"},
	})
	return len(w.out.ops) - 1, false, false
}

// call sends one create_ticket and classifies the answer.
func (w *worker) call(ctx context.Context, op int) sample {
	s := w.send(ctx, toolCreate, w.out.ops[op], classify)
	s.op = op
	return s
}

// callTool sends one call of the configured -tool with its fixed -args.
func (w *worker) callTool(ctx context.Context) sample {
	return w.send(ctx, w.cfg.Tool, w.cfg.Args, classifyOther)
}

// send makes one call, times it and classifies the answer.
func (w *worker) send(ctx context.Context, tool string, args any, classify func(*mcp.CallToolResult, error) sample) sample {
	callCtx, cancel := context.WithTimeout(ctx, w.cfg.Timeout)
	refused := new(string)
	callCtx = context.WithValue(callCtx, refusalKey{}, refused)
	start := time.Now()
	res, err := w.cs.CallTool(callCtx, &mcp.CallToolParams{Name: tool, Arguments: args})
	end := time.Now()
	timeout := errors.Is(callCtx.Err(), context.DeadlineExceeded)
	// Cancelled now, not deferred: in this loop a deferred cancel would
	// keep every call's timer alive until the worker ends.
	cancel()
	s := classify(res, err)
	if err != nil && *refused != "" {
		// Refused before any tool ran, and counted under its contract code
		// like the same refusal as a tool result.
		s = sample{outcome: toolError, code: *refused}
	}
	s.dur, s.end = end.Sub(start), end
	if err != nil && s.outcome != toolError {
		switch {
		case ctx.Err() != nil:
			s.outcome = interrupted
		case timeout:
			s.outcome = timedOut
		}
	}
	return s
}

func (w *worker) reconnect(ctx context.Context) error {
	_ = w.cs.Close()
	cctx, cancel := context.WithTimeout(ctx, connectTimeout(w.cfg))
	defer cancel()
	cs, err := dialRetrying(cctx, w.dial)
	if err != nil {
		return fmt.Errorf("reconnect: %w", err)
	}
	w.cs = cs
	w.out.reconnects++
	return nil
}

var errMalformed = errors.New("success result without ticket_id or replayed")

// classify turns a create_ticket answer into a sample. On the client side
// structuredContent is a map[string]any decoded from JSON.
func classify(res *mcp.CallToolResult, err error) sample {
	if err != nil {
		return sample{outcome: transport, err: err}
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		return sample{outcome: toolError, code: errorCode(sc)}
	}
	ticketID, _ := sc["ticket_id"].(string)
	isReplay, ok := sc["replayed"].(bool)
	if ticketID == "" || !ok {
		return sample{outcome: malformed, err: errMalformed}
	}
	opID, _ := sc["operation_id"].(string)
	s := sample{outcome: created, ticketID: ticketID, opID: opID}
	if isReplay {
		s.outcome = replayed
	}
	return s
}

// classifyOther turns the answer of any other tool into a sample: only
// whether it succeeded matters.
func classifyOther(res *mcp.CallToolResult, err error) sample {
	switch {
	case err != nil:
		return sample{outcome: transport, err: err}
	case res.IsError:
		sc, _ := res.StructuredContent.(map[string]any)
		return sample{outcome: toolError, code: errorCode(sc)}
	}
	return sample{outcome: answered}
}

// errorCode reads ticketd's error.code from an isError result; a server
// without one (such as the noop) shows as "(none)".
func errorCode(sc map[string]any) string {
	if e, ok := sc["error"].(map[string]any); ok {
		if c, ok := e["code"].(string); ok && c != "" {
			return c
		}
	}
	return "(none)"
}
