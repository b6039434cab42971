package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/examples/webhook-receiver/receiver"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/internal/logtest"
)

// countingReceiver is the reference receiver, counting the requests that
// reach it per webhook-id.
type countingReceiver struct {
	ref      *receiver.Receiver
	mu       sync.Mutex
	requests map[string]int
}

func (c *countingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.requests[r.Header.Get("webhook-id")]++
	c.mu.Unlock()
	c.ref.ServeHTTP(w, r)
}

func (c *countingReceiver) counts() (requests, distinct int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.requests {
		requests += n
	}
	return requests, len(c.requests)
}

// ticketdProcess is a built ticketd serving on a fixed address. Its stderr
// is a logtest.Buffer: exec's copier goroutine writes to it for as long as
// the process runs, while the test may read it (a failure's log, a check
// for panics).
type ticketdProcess struct {
	cmd    *exec.Cmd
	stderr logtest.Buffer
}

func startBinary(tb testing.TB, bin, addr string, env []string) *ticketdProcess {
	tb.Helper()
	p := &ticketdProcess{cmd: exec.Command(bin, "serve")}
	p.cmd.Env = append([]string{"TICKETD_ADDR=" + addr}, env...)
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start ticketd: %v", err)
	}
	tb.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	waitFor(tb, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return p
}

// kill9 kills ticketd with SIGKILL: no shutdown, no deferred Stop.
func (p *ticketdProcess) kill9(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		tb.Fatalf("kill -9 ticketd: %v", err)
	}
	_ = p.cmd.Wait()
}

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// api calls ticketd's REST API and decodes the answer into out.
func api(tb testing.TB, method, url, token string, body any, want int, out any, header ...string) {
	tb.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw := new(bytes.Buffer)
	_, _ = raw.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		tb.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, raw, want)
	}
	if out != nil {
		if err := json.Unmarshal(raw.Bytes(), out); err != nil {
			tb.Fatalf("%s %s: decode %s: %v", method, url, raw, err)
		}
	}
}

type deliveryList struct {
	Deliveries []struct {
		EventID   string `json:"event_id"`
		Status    string `json:"status"`
		Attempts  int    `json:"attempts"`
		LastError string `json:"last_error"`
	} `json:"deliveries"`
}

// TestKill9BetweenCommitAndDeliveryDeliversAfterRestart runs the built
// binary on PostgreSQL: two ticket writes commit while the receiver is
// down, ticketd is killed with SIGKILL with both deliveries still owed,
// and after a restart both arrive; a TCP proxy drops the receiver's answer
// to each first request after it acted, so each is sent again with the
// same webhook-id and the reference receiver's dedupe stops the duplicate. It
// logs the run's figures (go test -v -run Kill9 ./cmd/ticketd).
func TestKill9BetweenCommitAndDeliveryDeliversAfterRestart(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.PostgresURL(t)
	bin := filepath.Join(t.TempDir(), "ticketd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	addr, receiverAddr := freeAddr(t), freeAddr(t)
	wire := faultproxy.Start(t, receiverAddr) // the receiver behind it is down until the kill
	const issuer = "https://issuer.test"
	env := []string{
		"TICKETD_DATABASE_URL=" + rawURL, "TICKETD_JWT_ISSUER=" + issuer, "TICKETD_JWT_HS256_SECRET=" + testSecret,
		"TICKETD_WEBHOOK_RETRY_MIN=3s", "TICKETD_WEBHOOK_ALLOW_PRIVATE=true", "TICKETD_LOG_LEVEL=warn",
	}
	base := "http://" + addr
	token, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
		Issuer: issuer, Audience: base + "/mcp", Tenant: "acme", Subject: "ops",
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin}, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	first := startBinary(t, bin, addr, env)
	seedProject(t, rawURL, "acme")
	var hook struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	api(t, "POST", base+"/api/v1/webhooks", token, map[string]any{
		"url": "http://" + wire.Addr() + "/hooks", "events": []string{"ticket.created"},
	}, http.StatusCreated, &hook)
	const events = 2
	for i := range events {
		api(t, "POST", base+"/api/v1/tickets", token, map[string]any{"project_id": "support", "title": fmt.Sprintf("Printer %d on fire", i)},
			http.StatusCreated, nil, "Idempotency-Key", uuid.NewString())
	}
	deliveries := base + "/api/v1/webhooks/" + hook.ID + "/deliveries"
	// Kill once both are committed and tried once against a receiver that
	// is down, their jobs waiting out the 3s backoff in the queue. (A job
	// killed mid-attempt is rescued only after RescueAfter, 22s by default;
	// the webhooks package's own tests cover that path.)
	store, err := db.Open(context.Background(), rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	waitFor(t, func() bool {
		var waiting int64
		err := store.Gorm.Raw(`SELECT count(*) FROM river_job WHERE state IN ('available', 'retryable', 'scheduled') AND attempt = 1 AND scheduled_at > now() + interval '1 second'`).Scan(&waiting).Error
		return err == nil && waiting == events
	})
	first.kill9(t)

	ref, err := receiver.Open(filepath.Join(t.TempDir(), "receiver.db"), hook.Secret)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	counting := &countingReceiver{ref: ref, requests: map[string]int{}}
	dropped := []<-chan struct{}{wire.DropReplyAfter("webhook-id"), wire.DropReplyAfter("webhook-id")}
	ln, err := net.Listen("tcp", receiverAddr)
	if err != nil {
		t.Fatalf("receiver address taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: counting, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	second := startBinary(t, bin, addr, env)
	var final deliveryList
	defer func() {
		if t.Failed() {
			t.Logf("deliveries: %+v\nfirst ticketd:\n%s\nsecond ticketd:\n%s", final, first.stderr.String(), second.stderr.String())
		}
	}()
	waitFor(t, func() bool {
		api(t, "GET", deliveries, token, nil, http.StatusOK, &final)
		delivered := 0
		for _, d := range final.Deliveries {
			if d.Status == "delivered" {
				delivered++
			}
		}
		return delivered == events
	})
	attempts := 0
	for _, d := range final.Deliveries {
		attempts += d.Attempts
	}
	for _, d := range dropped {
		<-d
	}
	requests, distinct := counting.counts()
	acted, dupes, err := ref.Stats()
	if err != nil {
		t.Fatal(err)
	}
	lost := events - acted
	t.Logf("fault run: events %d, attempts %d, requests reaching the receiver %d, duplicates before dedupe %d, after dedupe %d, lost %d",
		events, attempts, requests, requests-distinct, acted-distinct, lost)
	if distinct != events || acted != events || dupes != requests-distinct || lost != 0 {
		t.Errorf("receiver: %d distinct webhook-ids, acted %d, dedupe stopped %d of %d duplicates; want %d, %d, all",
			distinct, acted, dupes, requests-distinct, events, events)
	}
	if requests-distinct < events {
		t.Errorf("each first answer was dropped, so each event should have been sent again: %d duplicates, want ≥ %d", requests-distinct, events)
	}
	if strings.Contains(second.stderr.String(), "panic") {
		t.Errorf("restarted ticketd logged a panic:\n%s", second.stderr.String())
	}
}
