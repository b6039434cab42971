// Package faultproxy provides a TCP proxy for tests that must lose a
// connection at a precise moment: right after a client sent a request whose
// outcome it then never learns (for example a PostgreSQL COMMIT), or right
// after a server started answering a request (for example an HTTP tool call).
//
// The proxy is protocol-agnostic: faults are triggered by a byte marker seen
// in the client-to-upstream stream, so it works for any request/response
// protocol spoken over TCP.
package faultproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// replyTimeout bounds how long DropReplyAfter waits for the upstream to
// answer; without it an upstream that never replies would hang the client
// connection instead of producing the intended fault.
const replyTimeout = 5 * time.Second

// dialTimeout keeps a connection attempt against a dead upstream from
// outliving a reasonable test deadline.
const dialTimeout = 10 * time.Second

const bufSize = 32 << 10

type faultKind int

const (
	// kindDrop waits for the upstream's reply before cutting, so the test
	// knows the request was processed but the client never learns it.
	kindDrop faultKind = iota
	// kindCut cuts at once, so the outcome is genuinely unknown.
	kindCut
	// kindFreeze withholds the chunk and everything after it, both ways,
	// with both connections left open: a peer that froze or vanished
	// without a FIN.
	kindFreeze
)

type fault struct {
	marker []byte // ASCII lower-cased
	kind   faultKind
	done   chan struct{}
}

// Proxy is a TCP proxy for tests that forwards bytes both ways and can be
// armed to lose the reply to one request.
type Proxy struct {
	tb       testing.TB
	upstream string
	ln       net.Listener
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	mu        sync.Mutex
	closing   bool
	conns     map[net.Conn]struct{}
	pending   []*fault // armed faults in arming order
	maxMarker int      // longest marker ever armed; sizes the per-stream tail
	fired     int
}

// Start starts a proxy listening on 127.0.0.1 on an ephemeral port that
// forwards every accepted connection to upstream. The listener and all live
// connections are closed, and all proxy goroutines have exited, when tb's
// cleanup runs.
func Start(tb testing.TB, upstream string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		tb:       tb,
		upstream: upstream,
		ln:       ln,
		ctx:      ctx,
		cancel:   cancel,
		conns:    make(map[net.Conn]struct{}),
	}
	p.wg.Go(p.acceptLoop)
	tb.Cleanup(p.shutdown)
	return p
}

// Addr returns the host:port that clients should dial instead of the
// upstream address.
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// DropReplyAfter arms a single fault. The next client-to-upstream chunk on
// any connection that contains marker (ASCII case-insensitive, also when the
// marker is split across reads) is forwarded in full. The proxy then waits
// until it has read at least one byte of the upstream's reply, or until the
// upstream closes, or for at most 5 seconds, and closes that client
// connection and its upstream connection without forwarding any of the
// reply. Other connections are unaffected. The returned channel is closed
// once the fault has fired and both connections are closed; a matching
// connection that fails on its own while the fault is in progress still
// counts as fired, since its client lost the reply either way.
//
// Bytes that arrive from the upstream while the marker chunk is still being
// written count as the reply, because the proxy cannot tell them apart from
// a fast answer.
func (p *Proxy) DropReplyAfter(marker string) <-chan struct{} {
	return p.arm(marker, kindDrop)
}

// CutAfter arms a single fault like DropReplyAfter, but closes both
// connections immediately after forwarding the matching chunk, without
// waiting for any reply. The upstream may or may not have processed the
// request, which models a truly unknown outcome.
func (p *Proxy) CutAfter(marker string) <-chan struct{} {
	return p.arm(marker, kindCut)
}

// FreezeBefore arms a single fault that freezes the link carrying marker:
// the chunk that contains it is not forwarded, nor is anything after it in
// either direction, and neither connection is closed by the proxy. To the
// upstream the client has gone silent mid-conversation, as a paused
// container or a vanished network path looks (for PostgreSQL, a session
// idle in its transaction, holding its locks); to the client the upstream
// never answers. The client closing its end is not passed on, so the
// upstream keeps a half-open connection. The link ends only when the
// upstream closes it (for example a server-side timeout) or the proxy shuts
// down. The returned channel is closed once the chunk has been withheld.
func (p *Proxy) FreezeBefore(marker string) <-chan struct{} {
	return p.arm(marker, kindFreeze)
}

// Fired reports how many armed faults have fired so far.
func (p *Proxy) Fired() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired
}

// CloseAll closes every live client and upstream connection, simulating a
// network blip. The proxy keeps listening and later connections work
// normally. Armed faults that have not fired stay armed.
func (p *Proxy) CloseAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) arm(marker string, kind faultKind) <-chan struct{} {
	f := &fault{
		marker: appendLower(nil, []byte(marker)),
		kind:   kind,
		done:   make(chan struct{}),
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, f)
	p.maxMarker = max(p.maxMarker, len(f.marker))
	return f.done
}

func (p *Proxy) shutdown() {
	p.mu.Lock()
	p.closing = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()

	p.cancel()
	p.ln.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}

func (p *Proxy) isClosing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closing
}

// track registers c so CloseAll and cleanup can reach it. It reports false
// when the proxy is shutting down, in which case the caller must close c
// itself, since shutdown has already taken its snapshot of connections.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closing {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) acceptLoop() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !p.isClosing() {
				p.tb.Errorf("faultproxy: accept: %v", err)
			}
			return
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.wg.Go(func() { p.serve(c) })
	}
}

// link is one proxied client connection and its upstream connection.
type link struct {
	client   net.Conn
	upstream net.Conn
	stream   stream // only touched by the request pump, under Proxy.mu

	mu      sync.Mutex
	swallow bool          // set before the marker chunk is written upstream
	replied bool          // guards the single close of reply
	reply   chan struct{} // closed on the first upstream bytes once swallowing
}

func (l *link) closeBoth() {
	l.client.Close()
	l.upstream.Close()
}

// swallowing reports whether upstream bytes must be discarded. It is checked
// after every upstream read and before the corresponding client write: any
// read that completes before swallow is set predates the marker chunk being
// sent, so it cannot contain the reply the fault is meant to lose.
func (l *link) swallowing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.swallow && !l.replied {
		l.replied = true
		close(l.reply)
	}
	return l.swallow
}

func (p *Proxy) serve(client net.Conn) {
	defer p.untrack(client)
	defer client.Close()

	d := net.Dialer{Timeout: dialTimeout}
	up, err := d.DialContext(p.ctx, "tcp", p.upstream)
	if err != nil {
		if !p.isClosing() {
			// Logged rather than reported as an error: tests may point the
			// proxy at an upstream that is down on purpose.
			p.tb.Logf("faultproxy: dial upstream %s: %v", p.upstream, err)
		}
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.untrack(up)
	defer up.Close()

	l := &link{client: client, upstream: up, reply: make(chan struct{})}
	upDone := make(chan struct{})
	p.wg.Go(func() {
		defer close(upDone)
		l.pumpReplies()
	})
	p.pumpRequests(l, upDone)
	<-upDone
}

// pumpRequests copies client bytes upstream and watches them for armed
// markers.
func (p *Proxy) pumpRequests(l *link, upDone <-chan struct{}) {
	buf := make([]byte, bufSize)
	for {
		n, err := l.client.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if f := p.claim(l, chunk); f != nil {
				p.fire(l, f, chunk, upDone)
				return
			}
			if _, werr := l.upstream.Write(chunk); werr != nil {
				l.closeBoth()
				return
			}
		}
		if err != nil {
			finish(err, l.upstream, l)
			return
		}
	}
}

// hold reads and discards the client's bytes of a frozen link until the
// client's end fails or closes, and passes neither on. The reply pump is
// already swallowing (claim set it), so it discards the upstream's bytes
// until the upstream closes.
func (l *link) hold() {
	buf := make([]byte, bufSize)
	for {
		if _, err := l.client.Read(buf); err != nil {
			return
		}
	}
}

// pumpReplies copies upstream bytes to the client unless the link is
// swallowing them for a fault.
func (l *link) pumpReplies() {
	buf := make([]byte, bufSize)
	for {
		n, err := l.upstream.Read(buf)
		if n > 0 && !l.swallowing() {
			if _, werr := l.client.Write(buf[:n]); werr != nil {
				l.closeBoth()
				return
			}
		}
		if err != nil {
			finish(err, l.client, l)
			return
		}
	}
}

// finish ends one direction. A clean EOF is passed on as a half-close so
// protocols that signal end of request by shutting down their write side
// keep working; anything else tears down both connections so the opposite
// pump does not block forever.
func finish(err error, dst net.Conn, l *link) {
	if errors.Is(err, io.EOF) {
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			return
		}
	}
	l.closeBoth()
}

// claim scans chunk for armed markers and, on a match, takes the earliest
// matching fault out of the pending list so that no other connection can
// trigger it. It also sets the link's swallow flag before returning, so the
// reply pump holds back everything from the moment the chunk is forwarded.
func (p *Proxy) claim(l *link, chunk []byte) *fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	hay, fresh := l.stream.window(chunk)
	var hit *fault
	for i, f := range p.pending {
		if matchEndsIn(hay, fresh, f.marker) {
			hit = f
			p.pending = slices.Delete(p.pending, i, i+1)
			break
		}
	}
	l.stream.keep(hay, p.maxMarker-1)
	if hit != nil {
		l.mu.Lock()
		l.swallow = true
		l.mu.Unlock()
	}
	return hit
}

// fire forwards the marker chunk, waits for the reply if the fault asks for
// it, and cuts the link. The connections are closed before the fault is
// reported so a test that sees the channel closed can rely on the client
// connection already being dead.
func (p *Proxy) fire(l *link, f *fault, chunk []byte, upDone <-chan struct{}) {
	if f.kind == kindFreeze {
		p.mu.Lock()
		p.fired++
		p.mu.Unlock()
		close(f.done)
		l.hold()
		return
	}
	_, err := l.upstream.Write(chunk)
	if err == nil && f.kind == kindDrop {
		t := time.NewTimer(replyTimeout)
		select {
		case <-l.reply:
		case <-upDone: // upstream gone: no reply will ever come
		case <-t.C:
		case <-p.ctx.Done():
		}
		t.Stop()
	}
	l.closeBoth()

	p.mu.Lock()
	p.fired++
	p.mu.Unlock()
	close(f.done)
}
