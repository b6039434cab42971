package main

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// TestPprofIsLoopbackOnly: profiles are never offered beyond loopback.
func TestPprofIsLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{":6060", "0.0.0.0:6060", "192.0.2.1:6060", "example.com:6060", "6060"} {
		if stop, err := startPprof(t.Context(), addr, slog.New(slog.DiscardHandler)); err == nil {
			stop()
			t.Errorf("startPprof(%q) succeeded; want a refusal", addr)
		}
	}
}

// TestPprofServesProfiles: on a loopback address the index answers.
func TestPprofServesProfiles(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	stop, err := startPprof(t.Context(), "127.0.0.1:0", slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, url, ok := strings.Cut(log.String(), "url=")
	if !ok {
		t.Fatalf("no url logged: %s", log.String())
	}
	url = strings.Fields(url)[0]
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "goroutine") {
		t.Errorf("GET %s: %d %.200s", url, resp.StatusCode, body)
	}
}
