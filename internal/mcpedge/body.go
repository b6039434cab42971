package mcpedge

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ticketd/ticketd/internal/errcode"
)

type callKey struct{}

// CallFrom returns the Call Body read from the request's body, for
// middlewares after it (StepUp) that must decide before the SDK runs.
func CallFrom(ctx context.Context) (Call, bool) {
	c, ok := ctx.Value(callKey{}).(Call)
	return c, ok
}

// HeldBody is a request body already read into memory (server.Bodies hands
// the handler one): Body takes its bytes as they are instead of copying
// them again.
type HeldBody interface {
	io.ReadCloser
	Held() []byte
}

// Body guards POST requests to the MCP endpoint before the SDK reads them.
// It reads the body under maxBytes (413 past it), answers anything
// CheckMessage refuses itself, and otherwise restores the body and passes
// the request on with its Call in the context (see CallFrom). Other methods
// (GET, DELETE) pass untouched: they carry no body the SDK parses.
//
// Statuses follow the SDK's own: 400 for a batch, a parse error or an
// invalid request; for -32601 and -32602, 404 and 400 on protocol
// 2026-07-28 and later and 200 before it; an invalid_input tool result is a
// normal 200 response. Every refusal carries a JSON-RPC body, which keeps a
// client's session alive where a plain-text error would end it.
func Body(maxBytes int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodPost {
				next.ServeHTTP(w, r)
				return
			}
			body, err := readBody(w, r, maxBytes)
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

// readBody returns the request's body: as server.Bodies already read it,
// or read here under limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if held, ok := r.Body.(HeldBody); ok {
		if int64(len(held.Held())) > limit {
			return nil, &http.MaxBytesError{Limit: limit}
		}
		return held.Held(), nil
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
	if r.Header.Get("Mcp-Protocol-Version") < Protocol2026 {
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
