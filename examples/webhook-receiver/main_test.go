package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/webhooks"
)

// syncBuffer is an io.Writer safe to read while run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunPrintsEachDeliveryOnce(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	args := []string{"-addr", addr, "-db", filepath.Join(t.TempDir(), "r.db")}
	getenv := func(k string) string {
		if k == "TICKETD_WEBHOOK_SECRET" {
			return secret
		}
		return ""
	}
	go func() { done <- run(ctx, args, getenv, out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()

	body := `{"type":"comment.created","timestamp":"2026-11-30T09:00:00Z","data":{"comment":{"body":"hi"}},"operation_id":null}`
	send := func() (int, error) {
		ts := time.Now().Unix()
		sig, err := webhooks.Sign(secret, "msg-1", ts, []byte(body))
		if err != nil {
			return 0, err
		}
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(body))
		req.Header.Set("webhook-id", "msg-1")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		req.Header.Set("webhook-signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	var code int
	for range 100 { // the listener comes up asynchronously
		if code, err = send(); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil || code != http.StatusNoContent {
		t.Fatalf("first delivery: %d, %v", code, err)
	}
	if code, err := send(); err != nil || code != http.StatusOK {
		t.Fatalf("redelivery: %d, %v", code, err)
	}
	if n := strings.Count(out.String(), "webhook-id=msg-1"); n != 1 {
		t.Errorf("printed the delivery %d times, want once:\n%s", n, out)
	}
	if !strings.Contains(out.String(), "comment.created webhook-id=msg-1") {
		t.Errorf("output lacks the event line:\n%s", out)
	}
}

func TestRunNeedsASecret(t *testing.T) {
	t.Parallel()
	err := run(context.Background(), nil, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-secret") {
		t.Errorf("run without a secret: %v", err)
	}
}
