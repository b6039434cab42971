package db

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// userTimeoutControl sets TCP_USER_TIMEOUT on ticketd's end of a database
// socket: a write the server never acknowledges (the server or the path to it
// gone) fails after d instead of after the kernel's retransmission schedule,
// which is about fifteen minutes. Keepalives cover an idle socket; this covers
// one with unacknowledged data.
func userTimeoutControl(d time.Duration) func(network, address string, c syscall.RawConn) error {
	return func(network, _ string, c syscall.RawConn) error {
		if network != "tcp" && network != "tcp4" && network != "tcp6" {
			return nil
		}
		var sockErr error
		err := c.Control(func(fd uintptr) {
			sockErr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
		})
		if err != nil {
			return err
		}
		return sockErr
	}
}
