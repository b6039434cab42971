package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// scrapeMetrics fetches /metrics from the running server as Prometheus
// would and returns every sample as "name{label="value",…}" → value, labels
// in name order.
func scrapeMetrics(url string) (map[string]float64, error) {
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics = %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("parse /metrics: %w", err)
	}
	samples := make(map[string]float64)
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			samples[name+"{"+strings.Join(labels, ",")+"}"] = value(f.GetType(), m)
		}
	}
	return samples, nil
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	case dto.MetricType_HISTOGRAM:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return m.GetUntyped().GetValue()
}

func operationsSample(action, outcome string) string {
	return fmt.Sprintf(`ticketd_operations_total{action=%q,outcome=%q}`, action, outcome)
}

func requestsSample(transport, routeOrTool, code string) string {
	return fmt.Sprintf(`ticketd_requests_total{code=%q,route_or_tool=%q,transport=%q}`, code, routeOrTool, transport)
}

// TestMetricsCountWritesThroughTheRealServer runs a small load through the
// real server, MCP and REST, while /metrics is scraped, and checks that each
// counter moved by exactly what the load did: every operation created once
// and replayed once, one conflict per transport.
func TestMetricsCountWritesThroughTheRealServer(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	before, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}

	// A scraper runs throughout, as Prometheus would; every scrape must
	// parse and no counter may go backwards.
	stop := make(chan struct{})
	scraped := make(chan error, 1)
	go func() {
		last := before
		for {
			select {
			case <-stop:
				scraped <- nil
				return
			default:
			}
			now, err := scrapeMetrics(env.URL)
			if err != nil {
				scraped <- err
				return
			}
			for k, v := range last {
				if strings.HasPrefix(k, "ticketd_") && now[k] < v {
					scraped <- fmt.Errorf("%s went from %v to %v", k, v, now[k])
					return
				}
			}
			last = now
		}
	}()

	const perTransport = 4
	session := env.Connect(t, token)
	var wg sync.WaitGroup
	errs := make(chan error, 2*perTransport*2)
	for i := range perTransport {
		wg.Add(2)
		go func() {
			defer wg.Done()
			args := map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": fmt.Sprintf("mcp %d", i)}
			for range 2 { // the first creates, the retry replays
				res, err := servertest.TryCall(session, mcptools.ToolCreateTicket, args)
				if err == nil && res.IsError {
					err = fmt.Errorf("create_ticket failed: %+v", res.StructuredContent)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			key := uuid.NewString()
			for _, want := range []int{http.StatusCreated, http.StatusOK} {
				if code := postTicket(t, env, token, key, fmt.Sprintf(`{"project_id":"support","title":"rest %d"}`, i)); code != want {
					errs <- fmt.Errorf("POST /api/v1/tickets = %d, want %d", code, want)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// One conflict per transport: a key reused for another ticket.
	key := uuid.NewString()
	servertest.Call(t, session, mcptools.ToolCreateTicket, map[string]any{"operation_id": key, "project_id": "support", "title": "first"})
	if res := servertest.Call(t, session, mcptools.ToolCreateTicket, map[string]any{"operation_id": key, "project_id": "support", "title": "second"}); !res.IsError {
		t.Fatal("reusing an operation_id for another ticket succeeded over MCP")
	}
	if code := postTicket(t, env, token, key, `{"project_id":"support","title":"third"}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("reusing the key over REST = %d, want 422", code)
	}

	close(stop)
	if err := <-scraped; err != nil {
		t.Fatalf("scrape during the load: %v", err)
	}
	want := map[string]float64{
		operationsSample("create_ticket", "created"):                   2*perTransport + 1,
		operationsSample("create_ticket", "replayed"):                  2 * perTransport,
		operationsSample("create_ticket", "conflict"):                  2,
		operationsSample("create_ticket", "unknown"):                   0,
		operationsSample("update_ticket", "created"):                   0,
		requestsSample("mcp", "create_ticket", "ok"):                   2*perTransport + 1,
		requestsSample("mcp", "create_ticket", "idempotency_conflict"): 1,
		requestsSample("rest", "/api/v1/tickets", "201"):               perTransport,
		requestsSample("rest", "/api/v1/tickets", "200"):               perTransport,
		requestsSample("rest", "/api/v1/tickets", "422"):               1,
	}
	// A REST request is counted when its handler returns, which can be just
	// after the client read the answer: give the last ones a moment. The
	// counters only grow, so waiting cannot hide an overcount.
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, err := scrapeMetrics(env.URL)
		if err != nil {
			t.Fatal(err)
		}
		var wrong []string
		for sample, delta := range want {
			if got := after[sample] - before[sample]; got != delta {
				wrong = append(wrong, fmt.Sprintf("%s moved by %v, want %v", sample, got, delta))
			}
		}
		if len(wrong) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(strings.Join(wrong, "\n"))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := env.CountTickets(t, "acme"); n != 2*perTransport+1 {
		t.Errorf("%d tickets, want %d", n, 2*perTransport+1)
	}
}

// postTicket creates a ticket over REST with key and returns the status.
// It reports failures with Errorf, so goroutines other than the test's may
// call it.
func postTicket(t *testing.T, env *servertest.Env, token, key, body string) int {
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/tickets", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}
