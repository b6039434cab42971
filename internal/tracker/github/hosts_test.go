package github_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestHostCapBoundsRequestsAcrossTenants: requests of two tenants to one
// hanging host never have more than HostConcurrency in flight there; the
// rest wait without sending, and a request that gives up waiting was not
// sent.
func TestHostCapBoundsRequestsAcrossTenants(t *testing.T) {
	t.Parallel()
	var inFlight, most atomic.Int64
	release := make(chan struct{})
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusNotFound)
	}))
	t.Cleanup(api.Close)
	t.Cleanup(func() { close(release) })

	opts := options("good")
	opts.Timeout, opts.HostConcurrency = time.Minute, 2
	openers := github.Opener(opts)
	var trackers []tracker.Tracker
	for _, tenant := range []string{"a", "b"} {
		b := backend(api.URL + "/")
		b.Tenant = tenant
		tr, err := openers(b)
		if err != nil {
			t.Fatal(err)
		}
		trackers = append(trackers, tr, tr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, tr := range trackers {
		go func() { _, _ = tr.GetIssue(ctx, "1") }()
	}
	deadline := time.Now().Add(10 * time.Second)
	for inFlight.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests reached the host within 10s, want 2", inFlight.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer wcancel()
	_, err := trackers[3].GetIssue(wctx, "1")
	if !errors.Is(err, tracker.ErrNotSent) {
		t.Errorf("a request that waited in vain for the host: %v, want ErrNotSent", err)
	}
	if m := most.Load(); m != 2 {
		t.Errorf("%d requests in flight at the host at once, want at most HostConcurrency = 2", m)
	}
}

// TestBreakerOpensOnUnansweredOnly: 5xx answers and timeouts in a row open
// the host's breaker, and then a request is not sent (HostDownError, which
// is ErrNotSent) and the host sees nothing; rejections and rate limits are
// answers and never open it. After the cool-down one probe goes and, when
// answered, closes it.
func TestBreakerOpensOnUnansweredOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	var mode atomic.Value // "", "hang" or "502"
	mode.Store("")
	var requests atomic.Int64
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch mode.Load() {
		case "hang":
			// Read first: the server notices the client going away only
			// once the body has been read.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		case "502":
			http.Error(w, "bad gateway", http.StatusBadGateway)
			return
		}
		gh.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	gh.SetBaseURL(api.URL)

	opts := options("good")
	opts.Timeout, opts.BreakerFailures, opts.BreakerCoolDown = 200*time.Millisecond, 3, 700*time.Millisecond
	tr, err := github.Opener(opts)(backend(api.URL + "/"))
	if err != nil {
		t.Fatal(err)
	}
	in := tracker.NewIssue{Title: "Widget jams", Body: "marker", Labels: []string{tracker.Label}}
	create := func() error { _, err := tr.CreateIssue(ctx, in); return err }

	// Rejections and rate limits, many in a row: answers.
	for range 4 {
		if _, err := tr.GetIssue(ctx, "99"); !errors.Is(err, tracker.ErrRejected) {
			t.Fatalf("get a missing issue: %v, want ErrRejected", err)
		}
	}
	for range 4 {
		gh.FailCreates(githubtest.TooManyRequests)
		var limited *tracker.RateLimitError
		if err := create(); !errors.As(err, &limited) {
			t.Fatalf("rate limited create: %v", err)
		}
	}
	// Two unanswered, then an answer: the count starts again.
	mode.Store("502")
	for range 2 {
		if err := create(); err == nil || errors.Is(err, tracker.ErrNotSent) {
			t.Fatalf("502: %v, want an error that leaves the outcome open", err)
		}
	}
	mode.Store("")
	if err := create(); err != nil {
		t.Fatalf("create on an answering host: %v", err)
	}
	// Three unanswered in a row: a 502, two timeouts.
	mode.Store("502")
	_ = create()
	mode.Store("hang")
	for range 2 {
		if err := create(); err == nil || errors.Is(err, tracker.ErrNotSent) {
			t.Fatalf("timeout: %v, want an error that leaves the outcome open", err)
		}
	}
	before := requests.Load()
	var down *tracker.HostDownError
	if err := create(); !errors.As(err, &down) || !errors.Is(err, tracker.ErrNotSent) || !strings.Contains(err.Error(), "not sent") {
		t.Fatalf("create with the breaker open: %v, want HostDownError (not sent)", err)
	}
	if down.RetryAfter <= 0 || down.RetryAfter > opts.BreakerCoolDown {
		t.Errorf("retry after %s, want within the cool-down %s", down.RetryAfter, opts.BreakerCoolDown)
	}
	if n := requests.Load() - before; n != 0 {
		t.Errorf("the host saw %d requests while its breaker was open, want none", n)
	}

	mode.Store("")
	time.Sleep(opts.BreakerCoolDown)
	if err := create(); err != nil {
		t.Fatalf("the probe after the cool-down: %v, want it sent and answered", err)
	}
	if n := requests.Load() - before; n != 1 {
		t.Errorf("the host saw %d requests for the probe, want 1", n)
	}
	if err := create(); err != nil {
		t.Fatalf("create after the probe closed the breaker: %v", err)
	}
}
