package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/pgaftest"
)

// Bounds of the failover run, small enough for CI: load for a moment
// before the kill, then until writes have succeeded again for a while.
const (
	failoverWorkers    = 4
	loadBeforeKill     = 2 * time.Second
	loadAfterRecovery  = 3 * time.Second
	recoveryDeadline   = 60 * time.Second // no write succeeding this long after the kill fails the test
	writeRetryBudget   = 45 * time.Second // one write is retried (same key) this long before it counts as unacknowledged
	retryPause         = 100 * time.Millisecond
	failoverTargetSecs = 30.0
)

// TestFailoverUnderLoadLosesNothing runs the built binary on the multi-host
// URL of a real pg_auto_failover formation (a primary and its synchronous
// standby), drives retrying REST creates, updates and comments at it, and
// kills the primary's keeper and postgres with SIGKILL mid-load (docs/scale.md).
// It checks that every acknowledged write is present exactly once,
// that no ticket was created twice, that every ticket's versions run 1..N
// without a gap, that no answer was a definite failure for a write that
// committed, that only honest codes were answered during the switch, that
// every committed event reached the webhook receiver, and that writes
// succeed again within failoverTargetSecs. Its figures are logged in one
// line (go test -v -run Failover ./cmd/ticketd under make test's
// environment).
func TestFailoverUnderLoadLosesNothing(t *testing.T) {
	t.Parallel()
	cluster := pgaftest.Start(t)
	bin := buildTicketd(t)
	hooks := newEventReceiver()
	receiverSrv := httptest.NewServer(hooks)
	defer receiverSrv.Close()

	addr := freeAddr(t)
	base := "http://" + addr
	const issuer = "https://issuer.test"
	token, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
		Issuer: issuer, Audience: base + "/mcp", Tenant: "acme", Subject: "ops",
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin}, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	proc := startBinary(t, bin, addr, []string{
		"TICKETD_DATABASE_URL=" + cluster.URL(), "TICKETD_JWT_ISSUER=" + issuer, "TICKETD_JWT_HS256_SECRET=" + testSecret,
		"TICKETD_WEBHOOK_RETRY_MIN=1s", "TICKETD_WEBHOOK_ALLOW_PRIVATE=true", "TICKETD_LOG_LEVEL=warn",
		// The load is the point; the tenant limits would only pace it.
		"TICKETD_RATE_LIMIT_WRITES=0", "TICKETD_RATE_LIMIT_READS=0",
	})
	defer func() {
		if t.Failed() {
			t.Logf("ticketd stderr:\n%s", proc.stderr.String())
		}
	}()
	seedProject(t, cluster.URL(), "acme")
	api(t, "POST", base+"/api/v1/webhooks", token, map[string]any{
		"url": receiverSrv.URL + "/hooks", "events": []string{"ticket.created", "ticket.updated", "comment.created"},
	}, http.StatusCreated, nil)

	l := &failoverLoad{base: base, token: token, client: &http.Client{Timeout: 20 * time.Second}, codes: map[string]int{}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range failoverWorkers {
		wg.Add(1)
		go func() { defer wg.Done(); l.worker(w, stop) }()
	}
	time.Sleep(loadBeforeKill)
	if err := cluster.Kill9(0); err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	l.markKill(time.Now())
	deadline := time.Now().Add(recoveryDeadline)
	for {
		if first, ok := l.firstSuccess(); ok && time.Since(first) >= loadAfterRecovery {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	states := cluster.States(ctx)
	recovered, recoveredOK := l.firstSuccess()
	if !recoveredOK {
		t.Fatalf("no write succeeded within %s of the kill; formation: %s", recoveryDeadline, states)
	}
	secs := recovered.Sub(l.killedAt).Seconds()

	store, err := db.Open(ctx, cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	f := l.check(t, store)
	stopped := time.Now()
	delivered, committed := waitDelivered(t, store, hooks)
	drained := time.Since(stopped).Seconds()
	reportHA(t, "failover: %d workers; acknowledged writes %d (creates %d, updates %d, comments %d), lost %d, duplicates %d, "+
		"false failures %d, unacknowledged %d; answers after the kill %s; first successful write %.1f s after the kill (target ≤ %.0f s); "+
		"webhook events delivered %d / committed %d (the last %.1f s after the load stopped); formation after: %s",
		failoverWorkers, f.acked, f.creates, f.updates, f.comments, f.lost, f.duplicates, f.falseFailures, f.unacked,
		l.codeSummary(), secs, failoverTargetSecs, delivered, committed, drained, states)
	if secs > failoverTargetSecs {
		t.Errorf("first successful write %.1f s after the kill, want ≤ %.0f s", secs, failoverTargetSecs)
	}
	if f.acked == 0 || f.updates == 0 || f.comments == 0 {
		t.Errorf("the load acknowledged %d creates, %d updates, %d comments; want some of each", f.creates, f.updates, f.comments)
	}
	for code := range l.codesAfterKill() {
		switch code {
		case "unavailable", "outcome_unknown", "operation_in_progress":
		default:
			t.Errorf("during the failover a write was answered %q; want only unavailable, outcome_unknown or operation_in_progress besides success", code)
		}
	}
	if delivered != committed {
		t.Errorf("webhook receiver got %d distinct events, %d committed", delivered, committed)
	}
}

// reportHA logs a line of figures and, when make test names a file in
// TICKETD_HA_REPORT, appends it there too: go test shows a passing test's
// log only with -v, and make test prints the file after the run.
func reportHA(t *testing.T, format string, args ...any) {
	t.Helper()
	line := fmt.Sprintf(format, args...)
	t.Log(line)
	path := os.Getenv("TICKETD_HA_REPORT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("TICKETD_HA_REPORT: %v", err)
		return
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%s: %s\n", t.Name(), line); err != nil {
		t.Errorf("TICKETD_HA_REPORT: %v", err)
	}
}

// buildTicketd builds the binary under test into a temporary directory.
func buildTicketd(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "ticketd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// eventReceiver answers every webhook 200 and counts requests per
// webhook-id.
type eventReceiver struct {
	mu  sync.Mutex
	ids map[string]int
}

func newEventReceiver() *eventReceiver { return &eventReceiver{ids: map[string]int{}} }

func (e *eventReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	e.mu.Lock()
	e.ids[r.Header.Get("webhook-id")]++
	e.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (e *eventReceiver) has(ids []string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, id := range ids {
		if e.ids[id] > 0 {
			n++
		}
	}
	return n
}

// failoverLoad is the retrying client: every write keeps its operation ID
// (Idempotency-Key) across retries, as the contract asks of a client.
type failoverLoad struct {
	base, token string
	client      *http.Client

	mu       sync.Mutex
	killedAt time.Time
	first    time.Time // first success of a request sent after the kill
	codes    map[string]int
	after    map[string]int
	acks     []ack
	failures []ack // definite failures: the write must not have committed
	unacked  []ack // retried for writeRetryBudget without an answer either way
}

// ack is one write and what ticketd answered for it.
type ack struct {
	kind     string // create, update, comment
	opID     string
	ticketID string
	title    string
	resultID string // comment ID for comments
	code     string
}

func (l *failoverLoad) markKill(at time.Time) {
	l.mu.Lock()
	l.killedAt = at
	l.after = map[string]int{}
	l.mu.Unlock()
}

func (l *failoverLoad) firstSuccess() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first, !l.first.IsZero()
}

// worker creates a ticket, updates it and comments on it, over and over,
// until stop closes; a write under way when it does is finished first.
func (l *failoverLoad) worker(w int, stop <-chan struct{}) {
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		title := fmt.Sprintf("failover w%d n%d", w, n)
		var created struct {
			ID string `json:"id"`
		}
		a, ok := l.write("create", "POST", "/api/v1/tickets", map[string]any{"project_id": "support", "title": title}, &created)
		a.title = title
		l.record(a, ok)
		if !ok {
			continue
		}
		u, ok := l.write("update", "PATCH", "/api/v1/tickets/"+created.ID, map[string]any{"description": "revised in round " + fmt.Sprint(n)}, nil)
		u.ticketID = created.ID
		l.record(u, ok)
		var comment struct {
			ID string `json:"id"`
		}
		c, ok := l.write("comment", "POST", "/api/v1/tickets/"+created.ID+"/comments", map[string]any{"body": "still broken"}, &comment)
		c.ticketID, c.resultID = created.ID, comment.ID
		l.record(c, ok)
	}
}

// write sends one write, retrying it with the same key while the answer
// says a retry can succeed. ok reports an acknowledgement; a.code is set
// for a definite failure or for giving up.
func (l *failoverLoad) write(kind, method, path string, body any, out any) (a ack, ok bool) {
	a = ack{kind: kind, opID: uuid.NewString()}
	raw, _ := json.Marshal(body)
	began := time.Now()
	for {
		sent := time.Now()
		status, code, resp, err := l.send(method, path, a.opID, raw)
		answered := time.Now()
		l.note(sent, code, status, err)
		switch {
		case err == nil && status < 300:
			if out != nil {
				_ = json.Unmarshal(resp, out)
			}
			if kind == "create" {
				var t struct {
					ID string `json:"id"`
				}
				_ = json.Unmarshal(resp, &t)
				a.ticketID = t.ID
			}
			l.mu.Lock()
			if !l.killedAt.IsZero() && sent.After(l.killedAt) && l.first.IsZero() {
				l.first = answered
			}
			l.mu.Unlock()
			return a, true
		case err != nil || status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests ||
			code == "operation_in_progress":
			if time.Since(began) > writeRetryBudget {
				a.code = "gave up: " + codeOrErr(code, err)
				return a, false
			}
			time.Sleep(retryPause)
		default:
			a.code = fmt.Sprintf("%d %s", status, code)
			return a, false
		}
	}
}

func codeOrErr(code string, err error) string {
	if err != nil {
		return err.Error()
	}
	return code
}

func (l *failoverLoad) send(method, path, key string, body []byte) (int, string, []byte, error) {
	req, err := http.NewRequest(method, l.base+path, bytes.NewReader(body))
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Authorization", "Bearer "+l.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", nil, err
	}
	var problem struct {
		Code string `json:"code"`
	}
	if resp.StatusCode >= 300 {
		_ = json.Unmarshal(raw, &problem)
	}
	return resp.StatusCode, problem.Code, raw, nil
}

// note counts an answer by code ("ok" for success, "transport" for none),
// separately for requests sent after the kill.
func (l *failoverLoad) note(sent time.Time, code string, status int, err error) {
	label := code
	switch {
	case err != nil:
		label = "transport"
	case status < 300:
		label = "ok"
	case label == "":
		label = fmt.Sprint(status)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.codes[label]++
	if !l.killedAt.IsZero() && sent.After(l.killedAt) {
		l.after[label]++
	}
}

func (l *failoverLoad) record(a ack, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case ok:
		l.acks = append(l.acks, a)
	case strings.HasPrefix(a.code, "gave up"):
		l.unacked = append(l.unacked, a)
	default:
		l.failures = append(l.failures, a)
	}
}

// codesAfterKill is the set of non-success answers to requests sent after
// the kill.
func (l *failoverLoad) codesAfterKill() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.after {
		if k != "ok" {
			out[k] = v
		}
	}
	return out
}

func (l *failoverLoad) codeSummary() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	keys := make([]string, 0, len(l.after))
	for k := range l.after {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, l.after[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// figures are what check found.
type figures struct {
	acked, creates, updates, comments        int
	lost, duplicates, falseFailures, unacked int
}

// check compares what the load was told with what the new primary holds.
func (l *failoverLoad) check(t *testing.T, store *db.DB) figures {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	g := store.Gorm
	var f figures
	count := func(q string, args ...any) int64 {
		var n int64
		if err := g.Raw(q, args...).Scan(&n).Error; err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	for _, a := range l.acks {
		f.acked++
		var n int64
		switch a.kind {
		case "create":
			f.creates++
			n = count("SELECT count(*) FROM tickets WHERE tenant_id = 'acme' AND operation_id = ? AND id = ?", a.opID, a.ticketID)
		case "update":
			f.updates++
			n = count("SELECT count(*) FROM ticket_events WHERE tenant_id = 'acme' AND operation_id = ? AND kind = 'updated'", a.opID)
		case "comment":
			f.comments++
			n = count("SELECT count(*) FROM comments WHERE tenant_id = 'acme' AND operation_id = ? AND id = ?", a.opID, a.resultID)
		}
		if n != 1 {
			f.lost++
			t.Errorf("acknowledged %s %s (ticket %s) is present %d times, want once", a.kind, a.opID, a.ticketID, n)
		}
	}
	// A title is written by one create only, so a title twice is a
	// ticket created twice.
	f.duplicates = int(count("SELECT count(*) FROM (SELECT title FROM tickets WHERE tenant_id = 'acme' GROUP BY title HAVING count(*) > 1) d"))
	if f.duplicates != 0 {
		t.Errorf("%d titles were created more than once", f.duplicates)
	}
	for _, a := range append(append([]ack{}, l.failures...), l.unacked...) {
		committed := count("SELECT count(*) FROM operations WHERE tenant_id = 'acme' AND operation_id = ?", a.opID)
		if strings.HasPrefix(a.code, "gave up") {
			f.unacked++
			t.Errorf("%s %s was never acknowledged (%s; committed: %d)", a.kind, a.opID, a.code, committed)
			continue
		}
		if committed != 0 {
			f.falseFailures++
		}
		t.Errorf("%s %s answered with the definite failure %s (committed: %d)", a.kind, a.opID, a.code, committed)
	}
	// Versions: a ticket's created and updated events carry 1..N, and N
	// is the ticket's version.
	gaps := count(`SELECT count(*) FROM tickets t WHERE t.tenant_id = 'acme' AND (
		(SELECT count(*) FROM ticket_events e WHERE e.tenant_id = t.tenant_id AND e.ticket_id = t.id AND e.kind <> 'commented') <> t.version
		OR (SELECT count(DISTINCT e.version) FROM ticket_events e WHERE e.tenant_id = t.tenant_id AND e.ticket_id = t.id AND e.kind <> 'commented') <> t.version
		OR (SELECT max(e.version) FROM ticket_events e WHERE e.tenant_id = t.tenant_id AND e.ticket_id = t.id) <> t.version)`)
	if gaps != 0 {
		t.Errorf("%d tickets have versions that do not run 1..version without a gap or repeat", gaps)
	}
	return f
}

// waitDelivered waits until every committed event of the tenant has
// reached the receiver and its outbox row says delivered (River's jobs ran
// to completion on the new primary), and returns how many of the committed
// events' IDs reached the receiver and how many events committed.
func waitDelivered(t *testing.T, store *db.DB, hooks *eventReceiver) (delivered, committed int) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		var events, undelivered int64
		var ids []string
		err := errors.Join(
			store.Gorm.Raw("SELECT count(*) FROM ticket_events WHERE tenant_id = 'acme'").Scan(&events).Error,
			store.Gorm.Raw("SELECT webhook_id::text FROM webhook_deliveries WHERE tenant_id = 'acme'").Scan(&ids).Error,
			store.Gorm.Raw("SELECT count(*) FROM webhook_deliveries WHERE tenant_id = 'acme' AND status <> 'delivered'").Scan(&undelivered).Error)
		if err != nil {
			t.Fatal(err)
		}
		delivered = hooks.has(ids)
		if delivered == int(events) && undelivered == 0 || time.Now().After(deadline) {
			if len(ids) != int(events) {
				t.Errorf("%d events committed but %d webhook deliveries: the outbox row must commit with the event", events, len(ids))
			}
			if undelivered != 0 {
				t.Errorf("%d webhook deliveries are not marked delivered 90 s after the load stopped", undelivered)
			}
			return delivered, int(events)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
