// Package logtest holds test support for reading what a running server logs.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a server's goroutines may write to while a
// test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
