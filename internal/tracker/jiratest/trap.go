package jiratest

import (
	"net"
	"sync/atomic"
	"testing"
)

// Trap is a listener on 127.0.0.1 that accepts every connection, closes it
// at once and counts it: the address a test gives a Jira site that ticketd
// must refuse, to show that ticketd sent it nothing at all, not even a
// connection.
type Trap struct {
	ln       net.Listener
	accepted atomic.Int32
}

// NewTrap starts a Trap, closed when tb's test ends.
func NewTrap(tb testing.TB) *Trap {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ln.Close() })
	t := &Trap{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.accepted.Add(1)
			_ = c.Close()
		}
	}()
	return t
}

// Addr is the trap's host:port.
func (t *Trap) Addr() string { return t.ln.Addr().String() }

// Accepted is how many connections the trap has accepted so far.
func (t *Trap) Accepted() int32 { return t.accepted.Load() }
