package observe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
	"github.com/ticketd/ticketd/internal/observe"
)

// scrape fetches /metrics through the real handler and parses the text
// exposition as Prometheus would.
func scrape(tb testing.TB, m *observe.Metrics) map[string]*dto.MetricFamily {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept", "text/plain")
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("GET /metrics = %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		tb.Fatalf("Content-Type = %q, want the text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(rec.Body)
	if err != nil {
		tb.Fatalf("parse scrape: %v", err)
	}
	return families
}

// value returns the sample of family whose labels include want, and whether
// there is one.
func value(families map[string]*dto.MetricFamily, family string, want map[string]string) (float64, bool) {
	f, ok := families[family]
	if !ok {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func operations(families map[string]*dto.MetricFamily, action, outcome string) float64 {
	v, _ := value(families, "ticketd_operations_total", map[string]string{"action": action, "outcome": outcome})
	return v
}

func TestScrapeCountsOneCreateAndOneReplay(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{Actions: []string{"create_ticket"}})
	before := scrape(t, m)

	m.OperationResult("create_ticket", "", false)
	m.OperationResult("create_ticket", "", true)

	after := scrape(t, m)
	for outcome, delta := range map[string]float64{
		"created": 1, "replayed": 1, "conflict": 0, "in_progress": 0, "unknown": 0, "invalid": 0, "failed": 0,
	} {
		got := operations(after, "create_ticket", outcome) - operations(before, "create_ticket", outcome)
		if got != delta {
			t.Errorf("outcome %s moved by %v, want %v", outcome, got, delta)
		}
	}
	if _, ok := value(after, "ticketd_operations_total", map[string]string{"action": "create_ticket", "outcome": "created"}); !ok {
		t.Error("no ticketd_operations_total{action=create_ticket,outcome=created} in the scrape")
	}
}

func TestScrapeHasTheContractFamilies(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{Actions: []string{"create_ticket", "update_ticket"}})
	d := dbtest.SQLite(t)
	sqlDB, err := d.Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CollectDB(sqlDB); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectOutboxPending(func(context.Context) (int64, error) { return 7, nil }); err != nil {
		t.Fatal(err)
	}
	m.Request(observe.REST, "/api/v1/tickets", "201", 3*time.Millisecond)
	m.Delivery(observe.Delivered)

	got := scrape(t, m)
	for _, family := range []string{
		"ticketd_operations_total", "ticketd_requests_total", "ticketd_request_duration_seconds",
		"ticketd_webhook_deliveries_total", "ticketd_outbox_pending",
		"go_sql_open_connections", "go_sql_max_open_connections", "go_sql_wait_count_total",
		"go_goroutines", "process_cpu_seconds_total",
	} {
		if _, ok := got[family]; !ok {
			t.Errorf("family %s missing from the scrape", family)
		}
	}
	for _, outcome := range []string{"created", "replayed", "conflict", "in_progress", "unknown", "invalid", "failed"} {
		if v, ok := value(got, "ticketd_operations_total", map[string]string{"action": "update_ticket", "outcome": outcome}); !ok || v != 0 {
			t.Errorf("operations{action=update_ticket,outcome=%s} = %v (present %v), want a 0 from the start", outcome, v, ok)
		}
	}
	if v, _ := value(got, "ticketd_outbox_pending", nil); v != 7 {
		t.Errorf("ticketd_outbox_pending = %v, want 7", v)
	}
	if v, _ := value(got, "go_sql_max_open_connections", map[string]string{"db_name": "ticketd"}); v != 4 {
		t.Errorf("go_sql_max_open_connections{db_name=ticketd} = %v, want SQLite's pool of 4", v)
	}
	if v, _ := value(got, "ticketd_request_duration_seconds", map[string]string{"transport": "rest", "route_or_tool": "/api/v1/tickets"}); v != 1 {
		t.Errorf("duration samples = %v, want 1", v)
	}
	for status, want := range map[string]float64{"delivered": 1, "retrying": 0, "unknown": 0, "failed": 0, "disabled": 0} {
		if v, ok := value(got, "ticketd_webhook_deliveries_total", map[string]string{"status": status}); !ok || v != want {
			t.Errorf("deliveries{status=%s} = %v (present %v), want %v", status, v, ok, want)
		}
	}
}

func TestOutboxCountFailureLeavesTheGaugeOutAndServesTheRest(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{})
	if err := m.CollectOutboxPending(func(context.Context) (int64, error) { return 0, errors.New("database is down") }); err != nil {
		t.Fatal(err)
	}
	m.OperationResult("create_ticket", "", false)
	got := scrape(t, m)
	if _, ok := got["ticketd_outbox_pending"]; ok {
		t.Error("ticketd_outbox_pending reported although its count failed: a false zero")
	}
	if operations(got, "create_ticket", "created") != 1 {
		t.Error("the other metrics were not served")
	}
}

func TestCollectorsRegisterOnce(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{})
	count := func(context.Context) (int64, error) { return 0, nil }
	if err := m.CollectOutboxPending(count); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectOutboxPending(count); err == nil {
		t.Error("a second outbox gauge was accepted")
	}
}

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		code     string
		replayed bool
		want     string // "" when the code is not an operation's outcome
	}{
		{"", false, "created"},
		{"", true, "replayed"},
		{string(errcode.IdempotencyConflict), false, "conflict"},
		{string(errcode.OperationExpired), false, "conflict"},
		{string(errcode.OperationInProgress), false, "in_progress"},
		{string(errcode.OutcomeUnknown), false, "unknown"},
		{string(errcode.InvalidInput), false, "invalid"},
		{string(errcode.NotFound), false, "invalid"},
		{string(errcode.AlreadyExists), false, "invalid"},
		{"version_conflict", false, "invalid"},
		{string(errcode.OperationFailed), false, "failed"},
		{string(errcode.Unavailable), false, "failed"},
		{string(errcode.Internal), false, "failed"},
		{"a_code_added_later", false, "failed"},
		{string(errcode.Unauthenticated), false, ""},
		{string(errcode.Forbidden), false, ""},
		{"rate_limited", false, ""},
		{string(errcode.ApprovalRequired), false, ""},
		{string(errcode.ApprovalDeclined), false, ""},
	}
	for _, c := range cases {
		got, ok := observe.OutcomeOf(c.code, c.replayed)
		switch {
		case c.want == "" && ok:
			t.Errorf("OutcomeOf(%q) = %s, want no outcome: an edge refusal is not an operation", c.code, got)
		case c.want != "" && (!ok || got.String() != c.want):
			t.Errorf("OutcomeOf(%q, %v) = %s, %v; want %s", c.code, c.replayed, got, ok, c.want)
		}
	}
}

func TestEdgeRefusalsAreNotCountedAsOperations(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{})
	m.OperationResult("create_ticket", string(errcode.Forbidden), false)
	if n, err := testutil.GatherAndCount(m.Registry(), "ticketd_operations_total"); err != nil || n != 0 {
		t.Errorf("ticketd_operations_total has %d series (err %v) after a refusal, want 0", n, err)
	}
}

func TestRequestLabelsStayBounded(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{})
	// A hostile client inventing a new tool name or path on every call.
	const calls = 5000
	for i := range calls {
		m.Request(observe.MCP, fmt.Sprintf("tool_%d", i), "ok", time.Millisecond)
	}
	n, err := testutil.GatherAndCount(m.Registry(), "ticketd_requests_total")
	if err != nil {
		t.Fatal(err)
	}
	if n > 600 { // the bound (512) plus one overflow series, with room to retune it
		t.Errorf("%d request series after %d distinct names: the label set is unbounded", n, calls)
	}
	got := scrape(t, m)
	overflow, _ := value(got, "ticketd_requests_total", map[string]string{"transport": "mcp", "route_or_tool": observe.Other, "code": observe.Other})
	var total float64
	for _, s := range got["ticketd_requests_total"].GetMetric() {
		total += s.GetCounter().GetValue()
	}
	if total != calls || overflow == 0 {
		t.Errorf("counted %v requests (%v under %q), want all %d counted, the excess under %q", total, overflow, observe.Other, calls, observe.Other)
	}

	for i := range 1000 {
		m.Operation(fmt.Sprintf("action_%d", i), observe.Created)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), "ticketd_operations_total"); n > 7*65 {
		t.Errorf("%d operation series after 1000 distinct actions: unbounded", n)
	}
}

func TestMiddlewareLabelsByRoutePatternNeverRawPath(t *testing.T) {
	t.Parallel()
	m := observe.New(observe.Options{})
	r := chi.NewRouter()
	r.Use(m.Middleware(observe.REST))
	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/tickets/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
		r.Post("/tickets", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusUnprocessableEntity) })
	})
	for _, target := range []string{"/api/v1/tickets/SUP-1", "/api/v1/tickets/SUP-2", "/no/such/path/SUP-3"} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, target, nil))
	}
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/api/v1/tickets", nil))

	got := scrape(t, m)
	for labels, want := range map[[2]string]float64{
		{"/api/v1/tickets/{id}", "200"}: 2,
		{"/api/v1/tickets", "422"}:      1,
		{observe.Unmatched, "404"}:      1,
	} {
		v, _ := value(got, "ticketd_requests_total", map[string]string{"transport": "rest", "route_or_tool": labels[0], "code": labels[1]})
		if v != want {
			t.Errorf("requests{route_or_tool=%q,code=%s} = %v, want %v", labels[0], labels[1], v, want)
		}
	}
	for _, s := range got["ticketd_requests_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if strings.Contains(l.GetValue(), "SUP-") {
				t.Errorf("label %s=%q carries a raw path", l.GetName(), l.GetValue())
			}
		}
	}
}

// The per-call cost on the hot path: an already bound series.
func BenchmarkOperationResult(b *testing.B) {
	m := observe.New(observe.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.OperationResult("create_ticket", "", true)
		}
	})
}

func BenchmarkRequest(b *testing.B) {
	m := observe.New(observe.Options{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Request(observe.MCP, "create_ticket", "ok", 3*time.Millisecond)
		}
	})
}

// The middleware's cost over a bare chi route.
func BenchmarkMiddleware(b *testing.B) {
	for _, instrumented := range []bool{false, true} {
		b.Run(fmt.Sprintf("instrumented=%v", instrumented), func(b *testing.B) {
			r := chi.NewRouter()
			if instrumented {
				r.Use(observe.New(observe.Options{}).Middleware(observe.REST))
			}
			r.Get("/api/v1/tickets/{id}", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			req := httptest.NewRequest(http.MethodGet, "/api/v1/tickets/SUP-1", nil)
			b.ReportAllocs()
			for b.Loop() {
				r.ServeHTTP(httptest.NewRecorder(), req)
			}
		})
	}
}

// TestOutcomesFollowTheErrorTable walks errcode.Table: every code counts as
// the outcome its row names, and every row names one this package counts
// (or none, for a refusal at the edge).
func TestOutcomesFollowTheErrorTable(t *testing.T) {
	t.Parallel()
	errcodetest.Walk(t, func(t *testing.T, row errcode.Row, err error) {
		got, ok := observe.OutcomeOf(string(row.Code), false)
		switch {
		case row.Outcome == errcode.NotCounted && ok:
			t.Errorf("%s counts as %s, want not counted: an edge refusal is not an operation", row.Code, got)
		case row.Outcome != errcode.NotCounted && (!ok || got.String() != string(row.Outcome)):
			t.Errorf("%s counts as %s (%v), want the row's %s", row.Code, got, ok, row.Outcome)
		}
		if err != nil {
			if again, _ := observe.OutcomeOf(string(errcode.Of(err)), false); again != got {
				t.Errorf("%v counts as %s, its code as %s", err, again, got)
			}
		}
	})
}
