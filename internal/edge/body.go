package edge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ticketd/ticketd/internal/errcode"
)

// DefaultMaxBody bounds an MCP request body when MCPBodyOptions.MaxBytes is
// zero. The largest legitimate call, a create_ticket with a 20000-character
// description, all of it JSON-escaped, stays well under it.
const DefaultMaxBody = 1 << 20

// protocol2026 is the first MCP protocol version whose HTTP transport maps
// JSON-RPC errors to HTTP statuses (SEP-2575); versions are dates, so they
// compare as strings.
const protocol2026 = "2026-07-28"

// MCPBodyOptions configures MCPBody.
type MCPBodyOptions struct {
	// MaxBytes caps the body; DefaultMaxBody if zero.
	MaxBytes int64
}

type callKey struct{}

// CallFrom returns the Call MCPBody read from the request's body, for
// middlewares after it (StepUp) that must decide before the SDK runs.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// MCPBody guards POST requests to the MCP endpoint before the SDK reads
// them. It reads the body under a size cap (413 past it), answers anything
// CheckMessage refuses itself, and otherwise restores the body and passes
// the request on with its Call in the context (see CallFrom). Other methods
// (GET, DELETE) pass untouched: they carry no body the SDK parses.
//
// Statuses follow the SDK's own: 400 for a batch, a parse error or an
// invalid request; for -32601 and -32602, 404 and 400 on protocol
// 2026-07-28 and later and 200 before it; an invalid_input tool result is a
// normal 200 response. Every refusal carries a JSON-RPC body, which keeps a
// client's session alive where a plain-text error would end it.
func MCPBody(opts MCPBodyOptions) func(http.Handler) http.Handler {
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			body, err := readBody(w, r, limit)
			if err != nil {
				NoteRefusal(r, Call{}, errcode.InvalidInput, "the body could not be read: "+err.Error())
				var tooBig *http.MaxBytesError
				if errors.As(err, &tooBig) {
					writeReply(w, http.StatusRequestEntityTooLarge, rpcError(nil, jsonrpc.CodeInvalidRequest, "request body is larger than the server accepts"))
					return
				}
				writeReply(w, http.StatusBadRequest, rpcError(nil, jsonrpc.CodeParseError, "request body could not be read"))
				return
			}
			call, reply := CheckMessage(body)
			if reply != nil {
				NoteRefusal(r, call, errcode.InvalidInput, "the edge refused the message")
				writeReply(w, replyStatus(r, reply.Code), reply)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callKey{}, call)))
		})
	}
}

// readBody returns the request's body: as Bodies already read it, or read
// here under limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if held, ok := r.Body.(*heldBody); ok {
		if int64(len(held.body)) > limit {
			return nil, &http.MaxBytesError{Limit: limit}
		}
		return held.body, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// replyStatus picks the HTTP status for a refusal the way the SDK would for
// the same JSON-RPC error.
func replyStatus(r *http.Request, code int64) int {
	switch code {
	case 0:
		return http.StatusOK
	case jsonrpc.CodeParseError, jsonrpc.CodeInvalidRequest:
		return http.StatusBadRequest
	}
	if r.Header.Get("Mcp-Protocol-Version") < protocol2026 {
		return http.StatusOK
	}
	if code == jsonrpc.CodeMethodNotFound {
		return http.StatusNotFound
	}
	return http.StatusBadRequest
}

func writeReply(w http.ResponseWriter, status int, reply *Reply) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(reply.Body) // the status is sent; a failed write has no one left to tell
}
