package server_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/server"
)

func TestLimitREST(t *testing.T) {
	t.Parallel()
	tenants, err := limits.New(limits.Config{WritesPerSecond: 0.5, ReadsPerSecond: 100})
	if err != nil {
		t.Fatal(err)
	}
	h := server.Limit(server.LimitOptions{
		Limits: tenants,
		Tenant: func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), r.Header.Get("X-Tenant") != "" },
	})(reached)
	do := func(method, tenant string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/api/v1/tickets", nil)
		if tenant != "" {
			r.Header.Set("X-Tenant", tenant)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// Burst: 2 × 0.5/s = 1 write.
	if w := do(http.MethodPost, "a"); w.Code != http.StatusNoContent {
		t.Fatalf("first write answered %d", w.Code)
	}
	// The refusal is held 0.75–1 s (the tarpit's spread bound) of the two
	// it names, so what is left, rounded up, is 1 or 2 s; never the whole 2
	// s unheld, which a client that retries at once would spin on.
	start := time.Now()
	w := do(http.MethodPost, "a")
	held := time.Since(start)
	if ra := w.Header().Get("Retry-After"); w.Code != http.StatusTooManyRequests || (ra != "1" && ra != "2") || !strings.Contains(w.Body.String(), `"rate_limited"`) {
		t.Errorf("write over the rate answered %d Retry-After %q %s, want 429, 1 or 2, rate_limited", w.Code, ra, w.Body)
	}
	if held < 700*time.Millisecond {
		t.Errorf("the refusal was held %s, want at least 0.75 s of its wait", held)
	}
	if w := do(http.MethodGet, "a"); w.Code != http.StatusNoContent {
		t.Errorf("read after writes ran out answered %d", w.Code)
	}
	if w := do(http.MethodPost, ""); w.Code != http.StatusNoContent {
		t.Errorf("request without a tenant answered %d, want to pass", w.Code)
	}
}

// stallReader is a request body that sends data, tells sent, and then
// blocks until release is closed before it ends.
type stallReader struct {
	data    []byte
	sent    chan struct{}
	release chan struct{}
}

func (s *stallReader) Read(p []byte) (int, error) {
	if len(s.data) > 0 {
		n := copy(p, s.data)
		s.data = s.data[n:]
		return n, nil
	}
	if s.sent != nil {
		close(s.sent)
		s.sent = nil
	}
	<-s.release
	return 0, io.EOF
}

// TestBodiesTakesTheTenantShareFirst: bytes are taken as they arrive, from
// the tenant's share (429 past it) and then from the global budget (503
// past it, with Spent true), and the handler gets every byte.
func TestBodiesTakesTheTenantShareFirst(t *testing.T) {
	t.Parallel()
	// A budget of 1000 bytes, 400 per tenant; a body of up to 300 bytes
	// (each takes its declared size plus one).
	budget, err := limits.NewBodies(1000, 400, 301)
	if err != nil {
		t.Fatal(err)
	}
	uploads, err := limits.New(limits.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h := server.Bodies(server.BodiesOptions{
		Budget: budget, Uploads: uploads, MaxBytes: 300,
		Tenant: func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), true },
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case err != nil || int64(len(b)) != r.ContentLength || strings.Trim(string(b), "a") != "":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	do := func(tenant string, body io.Reader, declared int64) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", body)
		r.ContentLength = declared
		r.Header.Set("X-Tenant", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	release := make(chan struct{})
	var stalled []chan int
	stall := func(tenant string) {
		sent := make(chan struct{})
		done := make(chan int, 1)
		go func() {
			done <- do(tenant, &stallReader{data: []byte(strings.Repeat("a", 10)), sent: sent, release: release}, 300).Code
		}()
		<-sent
		stalled = append(stalled, done)
	}
	stall("a") // 301 of a's 400, though only 10 bytes arrived
	if w := do("a", strings.NewReader(strings.Repeat("a", 100)), 100); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `"rate_limited"`) || !strings.Contains(w.Body.String(), `"retryable":true`) {
		t.Errorf("a's 100 more past its share answered %d Retry-After %q %s, want 429 rate_limited, retryable", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("b", strings.NewReader(strings.Repeat("a", 300)), 300); w.Code != http.StatusNoContent {
		t.Errorf("b's 300 beside a's stalled upload answered %d, want to pass", w.Code)
	}
	stall("c")
	stall("d") // 903 of 1000 held
	if !budget.Spent() {
		t.Error("less than one body free and Spent is false")
	}
	if w := do("e", strings.NewReader(strings.Repeat("a", 100)), 100); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" ||
		!strings.Contains(w.Body.String(), `"unavailable"`) || !strings.Contains(w.Body.String(), `"retryable":true`) {
		t.Errorf("e's 100 with 97 free answered %d Retry-After %q %s, want 503 unavailable, retryable", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := do("e", http.NoBody, 0); w.Code != http.StatusNoContent {
		t.Errorf("no body answered %d, want to pass free", w.Code)
	}
	close(release)
	for _, done := range stalled {
		if code := <-done; code != http.StatusInternalServerError && code != http.StatusNoContent {
			t.Errorf("a stalled upload ended with %d", code)
		}
	}
	if budget.Spent() {
		t.Error("Spent after every body was released")
	}
	// A body over MaxBytes reaches the handler as a read error, whether
	// declared or found as it arrives, so the route answers it.
	if w := do("a", strings.NewReader(strings.Repeat("a", 301)), 301); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("301 bytes declared answered %d, want 413", w.Code)
	}
	if w := do("a", io.MultiReader(strings.NewReader(strings.Repeat("a", 301))), -1); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("301 bytes of unknown length answered %d, want 413", w.Code)
	}
	if w := do("a", io.MultiReader(strings.NewReader(strings.Repeat("a", 300))), -1); w.Code != http.StatusNoContent {
		t.Errorf("300 bytes of unknown length answered %d, want to pass", w.Code)
	}
}
