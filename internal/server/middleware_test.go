package server

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// logLines decodes every JSON log line written to logs.
func logLines(t *testing.T, logs *logtest.Buffer) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

// TestEdgeLogsOnceWithWhatHandlersNoted: one access-log line per request,
// with the duration in milliseconds and the caller and error a handler
// recorded, under the request's ID.
func TestEdgeLogsOnceWithWhatHandlersNoted(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := chain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := reqinfo.From(r.Context())
		info.SetCaller("acme", "alice")
		info.SetRoute("/things/{id}")
		info.SetError("not_found", nil)
		w.WriteHeader(http.StatusNotFound)
	}), withRequestID, accessLog(logger), recoverPanics(logger), securityHeaders, limitBody)

	req := httptest.NewRequest(http.MethodGet, "/things/1", nil)
	req.Header.Set(RequestIDHeader, "trace-7")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)

	if w.Header().Get(RequestIDHeader) != "trace-7" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("response headers = %v, want the request ID and nosniff", w.Header())
	}
	lines := logLines(t, &logs)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %s", len(lines), logs.String())
	}
	l := lines[0]
	if l["request_id"] != "trace-7" || l["route"] != "/things/{id}" || l["tenant"] != "acme" || l["code"] != "not_found" ||
		l["status"] != float64(http.StatusNotFound) {
		t.Errorf("log line = %v", l)
	}
	if _, ok := l["duration_ms"].(float64); !ok {
		t.Errorf("log line has no numeric duration_ms: %v", l)
	}
}

// TestEdgeRecoversPanics: a panicking handler answers a 500 internal
// problem with the request ID, and the process survives.
func TestEdgeRecoversPanics(t *testing.T) {
	t.Parallel()
	var logs logtest.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	h := chain(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }),
		withRequestID, accessLog(logger), recoverPanics(logger))

	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/tickets", nil))

	var p struct {
		Code      string `json:"code"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if w.Code != http.StatusInternalServerError || p.Code != "internal" || p.RequestID == "" || strings.Contains(w.Body.String(), "boom") {
		t.Errorf("answer %d %s, want a 500 internal problem with a request ID and no panic text", w.Code, w.Body)
	}
	if !strings.Contains(logs.String(), "boom") || !strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("the panic is not logged at error level: %s", logs.String())
	}
}
