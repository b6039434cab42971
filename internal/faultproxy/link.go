package faultproxy

import (
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"
)

// link is one proxied client connection and its upstream connection.
type link struct {
	client   net.Conn
	upstream net.Conn
	stream   stream // only touched by the request pump, under Proxy.mu
	// seen counts, per armed fault of several markers, how many of them
	// this connection has shown in order (request pump, under Proxy.mu).
	seen map[*fault]int

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
		if l.advance(f, hay, fresh) {
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

// advance looks in hay for f's markers that this connection has not shown
// yet, in order, and reports whether the last of them has now been seen.
func (l *link) advance(f *fault, hay []byte, fresh int) bool {
	n := l.seen[f]
	for at := -1; n < len(f.markers); n++ {
		if at = nextMatch(hay, fresh, at, f.markers[n]); at < 0 {
			break
		}
	}
	if n == len(f.markers) {
		delete(l.seen, f)
		return true
	}
	if n > 0 {
		if l.seen == nil {
			l.seen = make(map[*fault]int)
		}
		l.seen[f] = n
	}
	return false
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
