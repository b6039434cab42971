// Package observe is ticketd's telemetry for operators (docs/contract.md#metrics):
// Prometheus metrics on a registry of the server's own, and OpenTelemetry
// traces — one span per request, child spans for the ledger and for each SQL
// statement — exported over OTLP/HTTP only when the standard
// OTEL_EXPORTER_OTLP_* variables ask for it.
//
// It imports no transport and no domain package: the transports and the
// service report what happened through a few cheap calls, with the contract's
// error codes as plain strings.
package observe

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Transport is the value of the transport label.
type Transport string

// The transports.
const (
	MCP  Transport = "mcp"
	REST Transport = "rest"
)

// Label values that stand in for values the metrics refuse to keep.
const (
	// Unmatched is the route_or_tool of a request no route matched: a raw
	// path never becomes a label value.
	Unmatched = "unmatched"
	// Other replaces a label value once the bound on distinct values is
	// reached, so a hostile or buggy caller cannot grow the series without end.
	Other = "other"
)

// Bounds on distinct label values. ticketd has a few dozen routes and tools
// and a handful of codes and actions; the bounds leave room for growth
// while keeping a scrape small whatever a client sends.
const (
	maxRequestSeries = 512
	maxActions       = 64
)

// durationBuckets span a replay answered from SQLite (well under a
// millisecond) to a write waiting out a lock timeout (seconds).
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// DeliveryStatus is the result of one webhook delivery attempt: the closed
// set of values of the status label of ticketd_webhook_deliveries_total.
type DeliveryStatus uint8

// The delivery statuses (docs/contract.md#webhooks).
const (
	// Delivered: the receiver answered 2xx.
	Delivered DeliveryStatus = iota
	// Retrying: another answer or a refused connection; the attempt will be repeated.
	Retrying
	// DeliveryUnknown: the request was sent without an answer; the receiver may have acted.
	DeliveryUnknown
	// DeliveryFailed: the last allowed attempt failed; no more will be made.
	DeliveryFailed
	// Disabled: the receiver answered 410 and the subscription was disabled.
	Disabled

	numDeliveryStatuses
)

var deliveryNames = [numDeliveryStatuses]string{
	Delivered:       "delivered",
	Retrying:        "retrying",
	DeliveryUnknown: "unknown",
	DeliveryFailed:  "failed",
	Disabled:        "disabled",
}

// String returns the label value.
func (s DeliveryStatus) String() string {
	if s >= numDeliveryStatuses {
		return "DeliveryStatus(" + strconv.Itoa(int(s)) + ")"
	}
	return deliveryNames[s]
}

// Options configures Metrics.
type Options struct {
	// Logger receives errors met while serving a scrape (a collector that
	// failed); nil discards them.
	Logger *slog.Logger
	// Actions are the ledger's actions (create_ticket, update_ticket, …),
	// bound up front so that every outcome of each reads 0 from the first
	// scrape: a rate over a series that appears only at its first event
	// misses that event.
	Actions []string
	// ReconcileResults are the results of a look at an external tracker
	// (tracked.ReconcileResults), bound up front like Actions.
	ReconcileResults []string
	// ApprovalEvents are the approval gate's events (asked, approved,
	// declined, expired), bound up front for the same reason.
	ApprovalEvents []string
}

// Metrics holds one server's metrics on a registry of its own, so two
// servers in one process (as in tests) never share counts. Its methods are
// safe for concurrent use.
type Metrics struct {
	registry   *prometheus.Registry
	logger     *slog.Logger
	operations *prometheus.CounterVec
	requests   *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	deliveries [numDeliveryStatuses]prometheus.Counter
	reconciles *prometheus.CounterVec
	approvals  *prometheus.CounterVec

	// Children of the vectors are bound once per label combination and kept
	// here, so the hot path is a map read and an atomic add.
	actions sync.Map // string -> *[numOutcomes]prometheus.Counter
	series  sync.Map // requestKey -> requestSeries

	mu       sync.Mutex // serialises binding new children and the counts below
	nActions int
	nSeries  int
}

type requestKey struct {
	transport   Transport
	routeOrTool string
	code        string
}

type requestSeries struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

// New creates the metrics of one server, with the Go runtime and process
// collectors already registered.
func New(opts Options) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		logger:   opts.Logger,
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_operations_total",
			Help: "Write operations by business action and outcome (created, replayed, conflict, in_progress, unknown, invalid, failed).",
		}, []string{"action", "outcome"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_requests_total",
			Help: "Requests by transport (mcp, rest), route pattern or tool name, and code (HTTP status for rest, contract error code or ok for mcp).",
		}, []string{"transport", "route_or_tool", "code"}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ticketd_approvals_total",
			Help: "Approvals of consequential writes by event (asked, approved, declined, expired).",
		}, []string{"event"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ticketd_request_duration_seconds",
			Help:    "Request duration in seconds by transport and route pattern or tool name.",
			Buckets: durationBuckets,
		}, []string{"transport", "route_or_tool"}),
	}
	deliveries := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_webhook_deliveries_total",
		Help: "Webhook delivery attempts by result (delivered, retrying, unknown, failed, disabled).",
	}, []string{"status"})
	for s := range numDeliveryStatuses {
		m.deliveries[s] = deliveries.WithLabelValues(s.String())
	}
	m.reconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ticketd_reconciliations_total",
		Help: "Looks at an external tracker for an operation's effect, by result (found, waiting, resent, duplicate, verified, held, error, resolved).",
	}, []string{"result"})
	for _, r := range opts.ReconcileResults {
		m.reconciles.WithLabelValues(r)
	}
	m.registry.MustRegister(
		m.operations, m.requests, m.durations, deliveries, m.reconciles, m.approvals,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, action := range opts.Actions {
		m.actionCounters(action)
	}
	for _, event := range opts.ApprovalEvents {
		m.approvals.WithLabelValues(event)
	}
	return m
}

// Reconciliation counts one look at an external tracker by its result.
func (m *Metrics) Reconciliation(result string) { m.reconciles.WithLabelValues(result).Inc() }

// Approval counts one event of the approval gate (approval.Options.OnEvent);
// its caller passes only the gate's own few event names.
func (m *Metrics) Approval(event string) { m.approvals.WithLabelValues(event).Inc() }

// Registry is the registry behind Handler, for collectors a caller adds.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// Handler serves the registry in the Prometheus text format, for GET /metrics.
// A collector that fails (the database is down) is logged and left out; the
// rest of the scrape is still served.
func (m *Metrics) Handler() http.Handler {
	opts := promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError,
		Registry:            m.registry,
		MaxRequestsInFlight: 4,
		Timeout:             10 * time.Second,
	}
	if m.logger != nil {
		opts.ErrorLog = slog.NewLogLogger(m.logger.Handler(), slog.LevelError)
	}
	return promhttp.HandlerFor(m.registry, opts)
}

// CollectDB adds the connection pool gauges of db (go_sql_* with
// db_name="ticketd": open, in use, idle, waits, wait time, closes).
func (m *Metrics) CollectDB(db *sql.DB) error {
	if err := m.registry.Register(collectors.NewDBStatsCollector(db, "ticketd")); err != nil {
		return fmt.Errorf("register database pool metrics: %w", err)
	}
	return nil
}

// outboxCountTimeout bounds the query behind ticketd_outbox_pending, so a
// slow database delays a scrape by at most this much.
const outboxCountTimeout = 2 * time.Second

// CollectOutboxPending adds the gauge ticketd_outbox_pending, read at each
// scrape from count (typically a COUNT over the undelivered outbox rows).
// When count fails the gauge is left out of that scrape and the error
// logged, rather than reporting a false zero.
func (m *Metrics) CollectOutboxPending(count func(context.Context) (int64, error)) error {
	c := &pendingCollector{
		desc:  prometheus.NewDesc("ticketd_outbox_pending", "Outbox events not yet delivered to every subscriber.", nil, nil),
		count: count,
	}
	if err := m.registry.Register(c); err != nil {
		return fmt.Errorf("register outbox metric: %w", err)
	}
	return nil
}

type pendingCollector struct {
	desc  *prometheus.Desc
	count func(context.Context) (int64, error)
}

func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), outboxCountTimeout)
	defer cancel()
	n, err := c.count(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, fmt.Errorf("count pending outbox events: %w", err))
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
}

// Operation counts one write operation of action (the ledger's action,
// e.g. create_ticket) with its outcome.
func (m *Metrics) Operation(action string, outcome Outcome) {
	if outcome >= numOutcomes {
		outcome = Failed
	}
	m.actionCounters(action)[outcome].Inc()
}

// OperationResult counts one write operation from its contract error code
// ("" on success) and replayed flag, as OutcomeOf maps them; edge refusals
// are not operations and are not counted. It is the one line a transport
// adds after calling the service.
func (m *Metrics) OperationResult(action, code string, replayed bool) {
	if outcome, ok := OutcomeOf(code, replayed); ok {
		m.Operation(action, outcome)
	}
}

func (m *Metrics) actionCounters(action string) *[numOutcomes]prometheus.Counter {
	if c, ok := m.actions.Load(action); ok {
		return c.(*[numOutcomes]prometheus.Counter)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.actions.Load(action); ok {
		return c.(*[numOutcomes]prometheus.Counter)
	}
	key := action
	if m.nActions >= maxActions {
		// Beyond the bound every new action shares the Other counters.
		key = Other
		if c, ok := m.actions.Load(Other); ok {
			return c.(*[numOutcomes]prometheus.Counter)
		}
	}
	c := new([numOutcomes]prometheus.Counter)
	for o := range numOutcomes {
		c[o] = m.operations.WithLabelValues(key, o.String())
	}
	m.actions.Store(key, c)
	m.nActions++
	return c
}

// Request counts one request and observes its duration. routeOrTool is the
// router's pattern (e.g. /api/v1/tickets/{id}) or the MCP tool name, never a
// raw path; "" counts as Unmatched. code is the HTTP status for REST and the
// contract error code, or "ok", for MCP.
func (m *Metrics) Request(transport Transport, routeOrTool, code string, d time.Duration) {
	s := m.requestSeries(requestKey{transport: transport, routeOrTool: routeOrTool, code: code})
	s.count.Inc()
	s.duration.Observe(d.Seconds())
}

func (m *Metrics) requestSeries(k requestKey) requestSeries {
	if s, ok := m.series.Load(k); ok {
		return s.(requestSeries)
	}
	if k.routeOrTool == "" {
		k.routeOrTool = Unmatched
		if s, ok := m.series.Load(k); ok {
			return s.(requestSeries)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.series.Load(k); ok {
		return s.(requestSeries)
	}
	if m.nSeries >= maxRequestSeries {
		// The overflow series is created on demand and not counted
		// against the bound, so it always exists once the bound is hit.
		// A name past the bound is not cached (that would grow memory
		// without end), so each such call takes the lock: only a
		// misbehaving caller pays that.
		k = requestKey{transport: k.transport, routeOrTool: Other, code: Other}
		if s, ok := m.series.Load(k); ok {
			return s.(requestSeries)
		}
	} else {
		m.nSeries++
	}
	s := requestSeries{
		count:    m.requests.WithLabelValues(string(k.transport), k.routeOrTool, k.code),
		duration: m.durations.WithLabelValues(string(k.transport), k.routeOrTool),
	}
	m.series.Store(k, s)
	return s
}

// Delivery counts one webhook delivery attempt with its result.
func (m *Metrics) Delivery(status DeliveryStatus) {
	if status >= numDeliveryStatuses {
		status = DeliveryFailed
	}
	m.deliveries[status].Inc()
}
