//go:build !linux

package db

import (
	"syscall"
	"time"
)

// userTimeoutControl is nil off Linux, where TCP_USER_TIMEOUT does not exist:
// the keepalives still bound an idle socket.
func userTimeoutControl(time.Duration) func(network, address string, c syscall.RawConn) error {
	return nil
}
