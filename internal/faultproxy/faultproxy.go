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
	"net"
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
	markers [][]byte // ASCII lower-cased, to be seen in this order on one connection
	kind    faultKind
	done    chan struct{}
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
// marker is split across reads) is forwarded in full. With then, the fault
// fires instead on the chunk that completes the last of them, each seen
// after the one before it on the same connection: the end of the request
// that carried marker, when marker is something only that request says (for
// PostgreSQL a statement's argument, then the Sync that ends the statement). The proxy then waits
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
func (p *Proxy) DropReplyAfter(marker string, then ...string) <-chan struct{} {
	return p.arm(kindDrop, marker, then)
}

// CutAfter arms a single fault like DropReplyAfter (then included), but closes both
// connections immediately after forwarding the matching chunk, without
// waiting for any reply. The upstream may or may not have processed the
// request, which models a truly unknown outcome.
func (p *Proxy) CutAfter(marker string, then ...string) <-chan struct{} {
	return p.arm(kindCut, marker, then)
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
// With then, the chunk withheld is the one that completes them, as
// DropReplyAfter reads them.
func (p *Proxy) FreezeBefore(marker string, then ...string) <-chan struct{} {
	return p.arm(kindFreeze, marker, then)
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

func (p *Proxy) arm(kind faultKind, marker string, then []string) <-chan struct{} {
	f := &fault{kind: kind, done: make(chan struct{})}
	for _, m := range append([]string{marker}, then...) {
		f.markers = append(f.markers, appendLower(nil, []byte(m)))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = append(p.pending, f)
	for _, m := range f.markers {
		p.maxMarker = max(p.maxMarker, len(m))
	}
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
