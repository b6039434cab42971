package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/server"
)

// TestShareWorkQueuesRESTWrites: REST writes and list pages take a slot
// of the limits.Work the MCP tools share, over real HTTP. With the one
// slot held elsewhere (an MCP call, here the test), a POST waits its turn
// and is served once the slot frees; a second one past its tenant's queue
// of one is refused 429 with Retry-After at once, never run; a read of
// one ticket passes without a slot; and a request whose caller gives up
// while it waits leaves nothing held.
func TestShareWorkQueuesRESTWrites(t *testing.T) {
	t.Parallel()
	work, err := limits.NewWork(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	pages, err := limits.NewSlots(2, 1)
	if err != nil {
		t.Fatal(err)
	}
	admission, err := limits.NewAdmission(work, pages, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var served []string
	srv := httptest.NewServer(server.ShareWork(server.ShareWorkOptions{
		Admission: admission,
		Tenant:    func(r *http.Request) (string, bool) { return r.Header.Get("X-Tenant"), true },
	})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})))
	t.Cleanup(srv.Close)
	send := func(ctx context.Context, method, path, tenant string) (*http.Response, error) {
		var body io.Reader // none on a GET: the server notices a caller gone only once any body is read
		if method != http.MethodGet {
			body = strings.NewReader("{}")
		}
		req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Tenant", tenant)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return resp, err
	}

	held, err := work.Acquire(context.Background(), "mcp-tenant")
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := send(context.Background(), http.MethodGet, "/api/v1/tickets/SUP-1", "a"); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("GET one ticket with the slot held: %v %v, want served at once", resp, err)
	}
	waited := make(chan int, 1)
	go func() {
		resp, err := send(context.Background(), http.MethodPost, "/api/v1/tickets", "a")
		if err != nil {
			t.Error(err)
			waited <- 0
			return
		}
		waited <- resp.StatusCode
	}()
	eventually(t, "the POST to wait its turn", func() bool { _, waiting := work.Busy(); return waiting == 1 })
	resp, err := send(context.Background(), http.MethodPatch, "/api/v1/tickets/SUP-1", "a")
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("a write past the tenant's queue: %v %v, want 429 with Retry-After: 1", resp, err)
	}
	held()
	if status := <-waited; status != http.StatusNoContent {
		t.Fatalf("the waiting POST: %d, want served once the slot freed", status)
	}

	held, err = work.Acquire(context.Background(), "mcp-tenant")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan struct{})
	go func() {
		defer close(gaveUp)
		if _, err := send(ctx, http.MethodGet, "/api/v1/tickets/SUP-1/comments", "b"); err == nil {
			t.Error("a list page whose caller gave up was answered")
		}
	}()
	eventually(t, "the list page to wait its turn", func() bool { _, waiting := work.Busy(); return waiting == 1 })
	cancel()
	<-gaveUp
	eventually(t, "the given-up request to leave the queue", func() bool { _, waiting := work.Busy(); return waiting == 0 })
	held()
	if running, waiting := work.Busy(); running != 0 || waiting != 0 {
		t.Fatalf("after every request: %d running, %d waiting; want none", running, waiting)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET /api/v1/tickets/SUP-1", "POST /api/v1/tickets"}; strings.Join(served, ",") != strings.Join(want, ",") {
		t.Fatalf("served %v, want %v", served, want)
	}
}
