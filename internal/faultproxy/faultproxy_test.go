package faultproxy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/faultproxy"
)

// ioTimeout bounds every client read so a broken proxy fails the test
// instead of hanging it.
const ioTimeout = 10 * time.Second

// lineServer is a line-oriented upstream that records every line it receives
// before acting on it. A line answers "ACK:<line>\n", except that lines
// starting with "SILENT" get no answer and lines starting with "CLOSE" make
// it close the connection.
type lineServer struct {
	ln net.Listener
	wg sync.WaitGroup

	mu    sync.Mutex
	lines []string
	conns map[net.Conn]struct{}
}

func startLineServer(t *testing.T) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{ln: ln, conns: make(map[net.Conn]struct{})}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns[c] = struct{}{}
			s.mu.Unlock()
			s.wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *lineServer) serve(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.lines = append(s.lines, line)
		s.mu.Unlock()
		switch {
		case strings.HasPrefix(line, "SILENT"):
		case strings.HasPrefix(line, "CLOSE"):
			return
		default:
			if _, err := fmt.Fprintf(c, "ACK:%s\n", line); err != nil {
				return
			}
		}
	}
}

func (s *lineServer) addr() string { return s.ln.Addr().String() }

// count reports how many times line was received.
func (s *lineServer) count(line string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.lines {
		if l == line {
			n++
		}
	}
	return n
}

// waitCount polls until line was received n times; polling is confined to
// the test side, where the upstream has no other way to signal progress.
func (s *lineServer) waitCount(t *testing.T, line string, n int) {
	t.Helper()
	deadline := time.Now().Add(ioTimeout)
	for s.count(line) < n {
		if time.Now().After(deadline) {
			t.Fatalf("upstream received %q %d times, want %d", line, s.count(line), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type client struct {
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, ioTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{c: c, r: bufio.NewReader(c)}
}

func (c *client) send(s string) error {
	_, err := io.WriteString(c.c, s)
	return err
}

func (c *client) readLine() (string, error) {
	if err := c.c.SetReadDeadline(time.Now().Add(ioTimeout)); err != nil {
		return "", err
	}
	return c.r.ReadString('\n')
}

// roundTrip sends line and returns the reply without its newline.
func (c *client) roundTrip(line string) (string, error) {
	if err := c.send(line + "\n"); err != nil {
		return "", err
	}
	s, err := c.readLine()
	return strings.TrimSuffix(s, "\n"), err
}

func mustAck(t *testing.T, c *client, line string) {
	t.Helper()
	got, err := c.roundTrip(line)
	if err != nil {
		t.Fatalf("round trip %.40q: %v", line, err)
	}
	if want := "ACK:" + line; got != want {
		t.Fatalf("round trip %.40q: got %.60q, want %.60q", line, got, want)
	}
}

// mustLose asserts that the connection is dead: the read fails, and not by
// hitting our own deadline, and no partial reply leaked through.
func mustLose(t *testing.T, c *client) {
	t.Helper()
	s, err := c.readLine()
	if err == nil {
		t.Fatalf("got reply %q, want connection loss", s)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read timed out instead of losing the connection")
	}
	if s != "" {
		t.Fatalf("leaked partial reply %q", s)
	}
}

func waitFired(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(ioTimeout):
		t.Fatal("fault did not fire")
	}
}

func assertNotFired(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("fault fired unexpectedly")
	default:
	}
}

func TestForwardsConcurrentConnections(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())

	const conns, lines = 32, 20
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i := range conns {
		c := dial(t, p.Addr())
		wg.Go(func() {
			for j := range lines {
				line := fmt.Sprintf("conn %d line %d", i, j)
				got, err := c.roundTrip(line)
				if err != nil {
					errs <- err
					return
				}
				if want := "ACK:" + line; got != want {
					errs <- fmt.Errorf("got %q, want %q", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := p.Fired(); n != 0 {
		t.Errorf("Fired() = %d, want 0", n)
	}
}

func TestForwardsLargePayload(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	c := dial(t, p.Addr())
	// Larger than the proxy's buffer, so it crosses many chunks each way.
	mustAck(t, c, strings.Repeat("x", 200<<10))
}

func TestDropReplyAfterCommit(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	bystander := dial(t, p.Addr())
	mustAck(t, bystander, "hello")

	fired := p.DropReplyAfter("commit")
	c := dial(t, p.Addr())
	mustAck(t, c, "begin")
	assertNotFired(t, fired)
	if err := c.send("COMMIT\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, fired)

	// The reply is only dropped after the upstream answered, so the request
	// has been processed by the time the client sees the loss.
	if n := up.count("COMMIT"); n != 1 {
		t.Fatalf("upstream received COMMIT %d times, want 1", n)
	}
	if n := p.Fired(); n != 1 {
		t.Fatalf("Fired() = %d, want 1", n)
	}

	// The fault is one-shot and does not touch other connections.
	mustAck(t, bystander, "commit")
	mustAck(t, dial(t, p.Addr()), "commit")

	fired2 := p.DropReplyAfter("commit")
	c2 := dial(t, p.Addr())
	if err := c2.send("commit\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c2)
	waitFired(t, fired2)
	if n := p.Fired(); n != 2 {
		t.Fatalf("Fired() = %d, want 2", n)
	}
}

func TestDropReplyAfterMarkerStraddlesWrites(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.DropReplyAfter("commit")
	c := dial(t, p.Addr())
	if err := c.send("COM"); err != nil {
		t.Fatal(err)
	}
	// Lets the proxy read "COM" on its own so the marker really is split.
	time.Sleep(50 * time.Millisecond)
	assertNotFired(t, fired)
	if err := c.send("MIT\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, fired)
	if n := up.count("COMMIT"); n != 1 {
		t.Fatalf("upstream received COMMIT %d times, want 1", n)
	}
}

// TestDropReplyAfterMarkersInOrder: with several markers the fault fires on
// the request that completes them in order on one connection, the way a
// test loses the reply to the PostgreSQL statement that carried an argument
// (the argument, then the statement's Sync): neither the last marker before
// the first, nor the first marker on another connection, fires it.
func TestDropReplyAfterMarkersInOrder(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.DropReplyAfter("title-7", "sync")
	c, other := dial(t, p.Addr()), dial(t, p.Addr())
	mustAck(t, c, "sync before the title")
	mustAck(t, other, "title-7 on another connection")
	mustAck(t, c, "sync, then title-7 after it")
	assertNotFired(t, fired)
	if err := c.send("SYNC\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, fired)
	if n := up.count("SYNC"); n != 1 {
		t.Fatalf("upstream received SYNC %d times, want 1: the request that completes the markers is forwarded", n)
	}
	mustAck(t, other, "sync once the fault fired")

	// Both markers in one request, split across reads: fires on it.
	both := p.DropReplyAfter("title-8", "sync")
	c = dial(t, p.Addr())
	if err := c.send("TITLE-8 and S"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	assertNotFired(t, both)
	if err := c.send("YNC\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, both)
	if n := up.count("TITLE-8 and SYNC"); n != 1 {
		t.Fatalf("upstream received the request %d times, want 1", n)
	}
}

func TestDropReplyAfterFiresOnceUnderConcurrency(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())

	const n = 8
	clients := make([]*client, n)
	for i := range clients {
		clients[i] = dial(t, p.Addr())
		mustAck(t, clients[i], "begin")
	}
	fired := p.DropReplyAfter("commit")

	var lost, acked atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, c := range clients {
		wg.Go(func() {
			<-start
			got, err := c.roundTrip("commit")
			switch {
			case err != nil && !errors.Is(err, os.ErrDeadlineExceeded):
				lost.Add(1)
			case err == nil && got == "ACK:commit":
				acked.Add(1)
			default:
				t.Errorf("unexpected reply %q, err %v", got, err)
			}
		})
	}
	close(start)
	wg.Wait()
	waitFired(t, fired)

	if lost.Load() != 1 || acked.Load() != n-1 {
		t.Fatalf("lost %d acked %d, want 1 and %d", lost.Load(), acked.Load(), n-1)
	}
	if got := p.Fired(); got != 1 {
		t.Fatalf("Fired() = %d, want 1", got)
	}
	if got := up.count("commit"); got != n {
		t.Fatalf("upstream received commit %d times, want %d", got, n)
	}
}

func TestDropReplyAfterUpstreamClosesWithoutReply(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.DropReplyAfter("commit")
	c := dial(t, p.Addr())
	start := time.Now()
	if err := c.send("CLOSE commit\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, fired)
	// Well below the 5 s reply timeout: an upstream that hung up cannot reply.
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("fault took %v, want it to fire as soon as the upstream closed", d)
	}
}

func TestCutAfterDoesNotWaitForReply(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.CutAfter("commit")
	c := dial(t, p.Addr())
	mustAck(t, c, "begin")
	start := time.Now()
	// The upstream never answers this line, so only an immediate cut can
	// end the read before the deadline.
	if err := c.send("SILENT commit\n"); err != nil {
		t.Fatal(err)
	}
	mustLose(t, c)
	waitFired(t, fired)
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("cut took %v, want immediate", d)
	}
	if n := p.Fired(); n != 1 {
		t.Fatalf("Fired() = %d, want 1", n)
	}
	mustAck(t, dial(t, p.Addr()), "after")
}

func TestCloseAll(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.DropReplyAfter("never-sent")

	var old []*client
	for i := range 3 {
		c := dial(t, p.Addr())
		mustAck(t, c, fmt.Sprint("before ", i))
		old = append(old, c)
	}
	p.CloseAll()
	for _, c := range old {
		mustLose(t, c)
	}
	assertNotFired(t, fired)
	if n := p.Fired(); n != 0 {
		t.Fatalf("Fired() = %d, want 0", n)
	}
	c := dial(t, p.Addr())
	mustAck(t, c, "after")
}

func TestHTTPDropReplyAfterCommit(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		calls.Add(1)
		fmt.Fprintf(w, "ok:%s", body)
	}))
	t.Cleanup(srv.Close)
	p := faultproxy.Start(t, srv.Listener.Addr().String())

	// No keep-alives: each request gets its own proxied connection, and the
	// transport has no idle connection it could retry on.
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: ioTimeout}
	url := "http://" + p.Addr() + "/mcp"
	const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket"}}`

	fired := p.DropReplyAfter("create_ticket")
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got status %s, want a transport error", resp.Status)
	}
	waitFired(t, fired)
	if n := calls.Load(); n != 1 {
		t.Fatalf("handler ran %d times, want exactly 1", n)
	}

	resp, err = hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("second request: %v", err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if want := "ok:" + body; string(got) != want {
		t.Fatalf("second response %q, want %q", got, want)
	}
	if n := calls.Load(); n != 2 {
		t.Fatalf("handler ran %d times, want 2", n)
	}
	if n := p.Fired(); n != 1 {
		t.Fatalf("Fired() = %d, want 1", n)
	}
}

// manualTB defers Cleanup functions until run is called, so a test can shut
// a proxy down while its clients and upstream are still alive.
type manualTB struct {
	testing.TB
	cleanups []func()
}

func (m *manualTB) Cleanup(f func()) { m.cleanups = append(m.cleanups, f) }

func (m *manualTB) run() {
	for _, f := range slices.Backward(m.cleanups) {
		f()
	}
}

// TestCleanupLeavesNoGoroutines is deliberately not parallel: Go runs
// sequential top-level tests before releasing parallel ones, so no other
// proxy is alive while the goroutine dump is taken.
func TestCleanupLeavesNoGoroutines(t *testing.T) {
	up := startLineServer(t)
	tb := &manualTB{TB: t}
	p := faultproxy.Start(tb, up.addr())

	idle := dial(t, p.Addr())
	mustAck(t, idle, "idle")

	half := dial(t, p.Addr())
	mustAck(t, half, "half")
	if err := half.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}

	// Leaves the proxy waiting for a reply that never comes; cleanup must
	// cut that wait short rather than sit out the reply timeout.
	p.DropReplyAfter("commit")
	waiting := dial(t, p.Addr())
	if err := waiting.send("SILENT commit\n"); err != nil {
		t.Fatal(err)
	}
	up.waitCount(t, "SILENT commit", 1)

	start := time.Now()
	tb.run()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("cleanup took %v, want it not to wait for the reply timeout", d)
	}

	buf := make([]byte, 1<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	for g := range strings.SplitSeq(dump, "\n\n") {
		if strings.Contains(g, "/internal/faultproxy.(*Proxy)") || strings.Contains(g, "/internal/faultproxy.(*link)") {
			t.Errorf("leaked proxy goroutine:\n%s", g)
		}
	}
	for _, c := range []*client{idle, half, waiting} {
		mustLose(t, c)
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), ioTimeout); err == nil {
		t.Error("proxy still accepts connections after cleanup")
	}
}

func TestFreezeBeforeWithholdsAndKeepsUpstreamOpen(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.FreezeBefore("commit")
	c := dial(t, p.Addr())
	mustAck(t, c, "begin")
	if err := c.send("frozen commit\n"); err != nil {
		t.Fatal(err)
	}
	waitFired(t, fired)
	if err := c.send("after the freeze\n"); err != nil {
		t.Fatal(err)
	}
	// The client hears nothing back: its read ends at its own deadline.
	if err := c.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if s, err := c.r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a frozen link = %q, %v; want our own deadline", s, err)
	}
	c.c.Close()
	// Another connection works, so the upstream is still listening; the
	// frozen one's lines never reached it, and its connection is not closed
	// by the client's going away (half-open).
	mustAck(t, dial(t, p.Addr()), "other")
	if n := up.count("frozen commit") + up.count("after the freeze"); n != 0 {
		t.Fatalf("upstream received %d withheld lines, want 0", n)
	}
	up.mu.Lock()
	open := len(up.conns)
	up.mu.Unlock()
	if open != 2 {
		t.Fatalf("upstream has %d open connections, want 2 (the frozen one still open)", open)
	}
}

func TestFreezeBeforeEndsWhenUpstreamCloses(t *testing.T) {
	t.Parallel()
	up := startLineServer(t)
	p := faultproxy.Start(t, up.addr())
	fired := p.FreezeBefore("commit")
	c := dial(t, p.Addr())
	mustAck(t, c, "begin")
	if err := c.send("frozen commit\n"); err != nil {
		t.Fatal(err)
	}
	waitFired(t, fired)
	// The upstream ends the session, as a server-side timeout would: the
	// client then loses its connection instead of waiting forever.
	up.mu.Lock()
	for conn := range up.conns {
		conn.Close()
	}
	up.mu.Unlock()
	mustLose(t, c)
}
