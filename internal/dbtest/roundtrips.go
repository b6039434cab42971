package dbtest

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
)

// RoundTrips counts the PostgreSQL round trips of a PostgresCounted
// database: the frontend messages the client then waits on, a simple query
// ('Q', which pgx uses for BEGIN and COMMIT) or the Sync ('S') that ends an
// extended-protocol query. It is safe for concurrent use; a nil *RoundTrips
// counts nothing.
type RoundTrips struct{ n atomic.Int64 }

// Count returns the round trips so far.
func (r *RoundTrips) Count() int64 {
	if r == nil {
		return 0
	}
	return r.n.Load()
}

// PostgresCounted is Postgres with every connection running through a
// proxy that counts its round trips, for benchmarks that report queries per
// call.
func PostgresCounted(tb testing.TB) (*db.DB, *RoundTrips) {
	tb.Helper()
	u, err := url.Parse(PostgresURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("round-trip proxy: listen: %v", err)
	}
	trips := &RoundTrips{}
	var wg sync.WaitGroup
	upstream := u.Host
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { trips.relay(c, upstream) })
		}
	})
	u.Host = ln.Addr().String()
	d, err := db.Open(context.Background(), u.String())
	if err != nil {
		_ = ln.Close()
		tb.Fatalf("open %s: %v", u.Redacted(), err)
	}
	tb.Cleanup(func() {
		_ = d.Close()
		_ = ln.Close()
		wg.Wait()
	})
	return d, trips
}

// relay forwards one connection both ways, counting the client's round
// trips, until either side closes.
func (r *RoundTrips) relay(client net.Conn, upstream string) {
	defer client.Close()
	server, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		_, _ = io.Copy(client, server)
		_ = client.Close()
	}()
	_ = r.count(bufio.NewReader(client), server)
}

// sslRequest and gssRequest are the startup-phase codes a client may send
// before its startup message.
const (
	sslRequest = 80877103
	gssRequest = 80877104
)

// count copies the frontend stream from src to dst message by message: the
// untyped startup messages first, then typed ones (a byte, then an int32
// length that includes itself).
func (r *RoundTrips) count(src *bufio.Reader, dst io.Writer) error {
	for {
		msg, err := readUntyped(src)
		if err != nil {
			return err
		}
		if _, err := dst.Write(msg); err != nil {
			return err
		}
		if code := binary.BigEndian.Uint32(msg[4:8]); code != sslRequest && code != gssRequest {
			break
		}
	}
	// One buffer per connection, so the proxy adds no allocation per
	// message to the benchmark it measures.
	buf := make([]byte, 0, 8<<10)
	for {
		buf = buf[:5]
		if _, err := io.ReadFull(src, buf); err != nil {
			return err
		}
		if buf[0] == 'Q' || buf[0] == 'S' {
			r.n.Add(1)
		}
		n := int(binary.BigEndian.Uint32(buf[1:5])) + 1
		if n < 5 {
			return errors.New("round-trip proxy: bad message length")
		}
		buf = slices.Grow(buf, n-5)[:n]
		if _, err := io.ReadFull(src, buf[5:]); err != nil {
			return err
		}
		if _, err := dst.Write(buf); err != nil {
			return err
		}
	}
}

func readUntyped(src *bufio.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(src, size[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(size[:])
	if n < 8 {
		return nil, errors.New("round-trip proxy: bad startup message")
	}
	msg := make([]byte, n)
	copy(msg, size[:])
	_, err := io.ReadFull(src, msg[4:])
	return msg, err
}
