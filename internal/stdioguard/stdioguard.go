// Package stdioguard makes an MCP server on stdio robust to its client:
// a malformed line or a batch is answered with a JSON-RPC error and the
// session goes on (the SDK would end it), and stdin closing does not drop
// calls already read (the SDK would cancel them and answer nothing).
//
// Wiring, for a server on the process's stdin and stdout:
//
//	out := stdioguard.NewWriter(os.Stdout)
//	t := &stdioguard.Transport{Transport: &mcp.IOTransport{
//		Reader: stdioguard.Filter(os.Stdin, out),
//		Writer: out,
//	}}
//	err := server.Run(ctx, t)
package stdioguard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/mcpedge"
)

// Defaults for zero options.
const (
	// DefaultMaxLine bounds one line (one message). It is far above any
	// legitimate ticketd call and far below the SDK's 16 MiB frame limit,
	// which would end the session instead of answering.
	DefaultMaxLine = 1 << 20
	// DefaultDrainTimeout bounds how long stdin's end waits for calls in
	// flight to be answered.
	DefaultDrainTimeout = 10 * time.Second
)

// Writer is the one writer of a stdio session's output, shared by the SDK
// and Filter: each Write is one whole message (the SDK writes a message and
// its newline in one call), and the lock keeps two messages from
// interleaving. It is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes p as one unit.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

// Close does nothing: the SDK closes its writer when the session ends, but
// the output (stdout) belongs to the process, which may still log a last
// line there or answer a late bad line.
func (w *Writer) Close() error { return nil }

// FilterOptions configures Filter.
type FilterOptions struct {
	// MaxLine bounds one line; DefaultMaxLine if zero.
	MaxLine int
}

// Filter returns a reader of in that passes on only lines the SDK can
// serve. Every other line is answered on out, in the same order as the
// lines, and dropped:
//
//   - not JSON, or longer than MaxLine: -32700 (parse error);
//   - a batch, or JSON that is not one JSON-RPC message: -32600;
//   - everything mcpedge.CheckMessage refuses (invalid UTF-8, duplicate keys,
//     tools/call arguments that are not an object, undeclared methods),
//     answered as it says.
//
// Blank lines are skipped. Closing the returned reader closes in if it is
// an io.Closer.
func Filter(in io.Reader, out io.Writer, opts FilterOptions) io.ReadCloser {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	return &filter{in: in, r: bufio.NewReaderSize(in, 64*1024), out: out, maxLine: maxLine}
}

type filter struct {
	in      io.Reader
	r       *bufio.Reader
	out     io.Writer
	maxLine int
	pending []byte // the rest of an accepted line, newline included
	err     error  // the input's error, returned once pending is empty
}

func (f *filter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, tooLong, err := f.readLine()
		if err != nil {
			f.err = err
		}
		if tooLong {
			if werr := f.answer(rpcError(jsonrpc.CodeParseError, "message is longer than the server accepts")); werr != nil {
				return 0, werr
			}
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if reply := check(line); reply != nil {
			if werr := f.answer(reply); werr != nil {
				return 0, werr
			}
			continue
		}
		f.pending = append(line, '\n')
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads up to the next newline. A line past maxLine is consumed to
// its end and reported as tooLong, so the next line is read cleanly.
func (f *filter) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !tooLong {
			line = append(line, chunk...)
			if len(line) > f.maxLine+1 {
				tooLong, line = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), tooLong, err
	}
}

// check returns the answer to a line that must not reach the SDK, or nil.
func check(line []byte) []byte {
	if _, reply := mcpedge.CheckMessage(line); reply != nil {
		return reply.Body
	}
	// CheckMessage passed it as one well-formed JSON object; the SDK still
	// ends the session on one that is not a JSON-RPC message.
	if _, err := jsonrpc.DecodeMessage(line); err != nil {
		return rpcError(jsonrpc.CodeInvalidRequest, "not a JSON-RPC 2.0 request, notification or response")
	}
	return nil
}

func (f *filter) answer(body []byte) error {
	_, err := f.out.Write(append(body, '\n'))
	return err
}

func (f *filter) Close() error {
	if c, ok := f.in.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// rpcError is a JSON-RPC error response with a null id: the line it answers
// had no id that can be trusted.
func rpcError(code int64, message string) []byte {
	return mcpedge.RPCError(nil, code, message)
}

// Transport wraps an mcp.Transport (an IOTransport over Filter) so that the
// end of the input does not end the session while calls read from it are
// unanswered: the read that hits the end waits until every request read
// has its response written, or DrainTimeout passes, and only then reports
// the end. A client may thus write a request and close stdin at once, and
// still get its answer; a create_ticket written just before EOF runs to
// completion. Closing the connection (shutdown) does not wait.
type Transport struct {
	// Transport is the wrapped transport. Required.
	Transport mcp.Transport
	// DrainTimeout bounds the wait at the end of input;
	// DefaultDrainTimeout if zero.
	DrainTimeout time.Duration
}

// Connect connects the wrapped transport and wraps its connection.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	timeout := t.DrainTimeout
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	return &conn{Connection: c, timeout: timeout, pending: make(map[jsonrpc.ID]int), changed: make(chan struct{}), closed: make(chan struct{})}, nil
}

type conn struct {
	mcp.Connection
	timeout time.Duration

	mu      sync.Mutex
	pending map[jsonrpc.ID]int // requests read and not yet answered
	changed chan struct{}      // closed and replaced when pending shrinks

	closeOnce sync.Once
	closed    chan struct{}
}

// Read counts each request it returns; when the input ends, it waits for
// the answers before returning the end.
func (c *conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		c.drain(ctx)
		return nil, err
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.ID.IsValid() {
		c.mu.Lock()
		c.pending[req.ID]++
		c.mu.Unlock()
	}
	return msg, nil
}

// Write marks a request answered once its response is written (or failed
// to write: then no answer is coming either).
func (c *conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.pending[resp.ID] > 0 {
			if c.pending[resp.ID]--; c.pending[resp.ID] == 0 {
				delete(c.pending, resp.ID)
			}
			close(c.changed)
			c.changed = make(chan struct{})
		}
		c.mu.Unlock()
	}
	return err
}

func (c *conn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return c.Connection.Close()
}

// drain waits until no request is unanswered, the connection is closed,
// ctx ends or the timeout passes.
func (c *conn) drain(ctx context.Context) {
	timer := time.NewTimer(c.timeout)
	defer timer.Stop()
	for {
		c.mu.Lock()
		n, changed := len(c.pending), c.changed
		c.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-c.closed:
			return
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}
