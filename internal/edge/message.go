// Package edge holds the HTTP middlewares that stand in front of ticketd's
// MCP endpoint and REST API: the checks that must run before the MCP SDK or
// a handler sees a request (hostile bodies, Origin and Host, step-up
// scopes). Each middleware is a plain func(http.Handler) http.Handler
// configured by a small options struct; none knows the routes it guards.
//
// The order on /mcp, outermost first (TestChainInWiringOrder runs it):
//
//	Origin → SingleAuthorization → auth.RequireBearerToken → Concurrency →
//	Bodies → MCPBody → StepUp → MCPLimits → the SDK's StreamableHTTPHandler
//
// Origin refuses before anything runs; SingleAuthorization bounds the
// header before any token is parsed; the token is verified before a byte
// of the body is read, so Concurrency and Bodies count every upload against
// its own tenant first (docs/contract.md#fair-share): a tenant's stalled uploads fill its own
// slots and its share of the body budget, never everyone's. MCPBody feeds
// StepUp and MCPLimits the peeked Call; StepUp's 403s are cheap and draw on
// no bucket. The MCP server itself gets FilterTools as receiving middleware
// and PrivateToolList as ServerOptions.SetCacheable. /api/v1 takes Origin
// and SingleAuthorization the same way, and Limit then Bodies after its own
// authentication. Probes and metadata stay outside all of it; the console
// and /metrics take Host.
package edge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/buildinfo"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// Call is what a JSON-RPC request body asked for, as the SDK will read it.
type Call struct {
	// Method is the JSON-RPC method, such as "tools/call".
	Method string
	// Tool is params.name of a tools/call; empty otherwise.
	Tool string
	// ID is the request's id as sent; nil for a notification.
	ID json.RawMessage
	// Version is the protocol version the request names in its _meta
	// (2026-07-28 and later name it on every request); empty before.
	Version string
}

// Protocol2026 is the first protocol version whose results carry a
// resultType and the server's identity in _meta (SEP-2322, SEP-2575).
const Protocol2026 = protocol2026

// ServerInfo is the server's identity, as initialize and (from
// 2026-07-28) every result's _meta name it.
func ServerInfo() *mcp.Implementation {
	return &mcp.Implementation{Name: "ticketd", Title: "ticketd", Version: buildinfo.Version()}
}

// Reply is the answer CheckMessage gives in place of the SDK: either a
// JSON-RPC error or a tools/call result with isError.
type Reply struct {
	// Body is one JSON-RPC response message.
	Body []byte
	// Code is the JSON-RPC error code, or 0 for an isError tool result.
	Code int64
}

// methodAllowed lists what ticketd serves: only the tools capability is
// declared, yet the SDK dispatches prompts/*, resources/*, logging/* and
// completion/* from a fixed table, so anything else is refused here with
// -32601 (the 2026-07-28 conformance rule for undeclared capabilities).
func methodAllowed(m string) bool {
	switch m {
	case "initialize", "ping", "server/discover", "tools/list", "tools/call":
		return true
	}
	return strings.HasPrefix(m, "notifications/")
}

// CheckMessage inspects one JSON-RPC message (an HTTP body or a stdio line)
// the way the SDK will read it and returns what it asks for. When the
// message must not reach the SDK, the Reply is non-nil and is the answer to
// send instead:
//
//   - a batch: -32600, whatever the protocol version;
//   - not JSON, or not one JSON value: -32700;
//   - invalid UTF-8 or a lone escaped surrogate (which the SDK would turn
//     into U+FFFD), a duplicate object key at any depth (the SDK keeps the
//     last, a gateway may read the first), or a tools/call whose arguments
//     are null or not an object (null panics inside the SDK for a schema
//     with defaults): an isError tool result with invalid_input for a
//     tools/call, else -32602 (-32600 when the envelope itself is
//     ambiguous, so no id can be trusted);
//   - a method of a capability ticketd does not declare: -32601.
//
// A message that is a JSON-RPC response (no method) passes unchecked beyond
// the byte-level rules; the SDK handles it.
func CheckMessage(msg []byte) (Call, *Reply) {
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported; send one request per message")
	}
	dupDepth, err := walk(msg)
	if err != nil {
		return Call{}, rpcError(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(msg, &env); err != nil {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	if dupDepth == 1 {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "duplicate member in the JSON-RPC envelope")
	}
	call := Call{ID: env["id"]}
	if string(call.ID) == "null" {
		call.ID = nil
	}
	if !idExact(call.ID) {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "id must be a string or an integer of at most 2^53 in magnitude, so that the answer can carry it back exactly")
	}
	if raw, ok := env["method"]; ok {
		if err := json.Unmarshal(raw, &call.Method); err != nil {
			return call, rpcError(call.ID, jsonrpc.CodeInvalidRequest, "method must be a string")
		}
	}
	var params map[string]json.RawMessage
	if call.Method == "tools/call" {
		if err := json.Unmarshal(env["params"], &params); err != nil || params == nil {
			return call, rpcError(call.ID, jsonrpc.CodeInvalidParams, "tools/call params must be an object")
		}
		// A non-string name is left to the SDK, which refuses it.
		_ = json.Unmarshal(params["name"], &call.Tool)
	}
	if raw, ok := env["params"]; ok {
		// Best effort: a _meta the SDK cannot read is the SDK's to refuse.
		var p struct {
			Meta struct {
				Version string `json:"io.modelcontextprotocol/protocolVersion"`
			} `json:"_meta"`
		}
		if json.Unmarshal(raw, &p) == nil {
			call.Version = p.Meta.Version
		}
	}

	// Byte-level and structural rules, answered in the form the message
	// allows.
	var problem string
	switch {
	case !utf8.Valid(msg):
		problem = "input is not valid UTF-8"
	case hasLoneSurrogate(msg):
		problem = `input contains an unpaired UTF-16 surrogate escape (\uD800-\uDFFF)`
	case dupDepth > 0:
		problem = "input has a duplicate object key; each key may appear once per object"
	}
	if call.Method == "" {
		// A response from the client: nothing of ours to answer.
		if problem != "" {
			return call, rpcError(nil, jsonrpc.CodeInvalidRequest, problem)
		}
		return call, nil
	}
	if call.Method == "tools/call" && problem == "" {
		if args, ok := params["arguments"]; ok {
			if t := bytes.TrimLeft(args, " \t\r\n"); len(t) == 0 || t[0] != '{' {
				problem = "arguments must be a JSON object (use {} for a tool without arguments)"
			}
		}
	}
	if problem != "" {
		if call.Method == "tools/call" && call.ID != nil {
			return call, toolError(call, problem)
		}
		return call, rpcError(call.ID, jsonrpc.CodeInvalidParams, problem)
	}
	if !methodAllowed(call.Method) {
		return call, rpcError(call.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not supported: this server declares only the tools capability", call.Method))
	}
	return call, nil
}

// maxExactID is the largest integer id a float64, which the SDK decodes
// ids into, holds exactly.
const maxExactID = 1 << 53

// idExact reports whether the SDK will answer id exactly as sent: a string,
// or an integer literal within ±2^53. The SDK decodes a numeric id into a
// float64 and answers it as an int64, so 1.5 came back as 1, 1e3 as 1000
// and 2^53+1 as 2^53: answers a client could match to the wrong request.
// Other kinds (objects, booleans) are left to the SDK, which refuses them.
func idExact(id json.RawMessage) bool {
	if len(id) == 0 || (id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		return true
	}
	n, err := strconv.ParseInt(string(id), 10, 64)
	return err == nil && n >= -maxExactID && n <= maxExactID && (id[0] != '-' || n != 0)
}

// walk checks that msg is exactly one JSON value and reports the depth of
// the first object holding a duplicate key (1 = the top-level object), or 0.
// Keys compare case-sensitively, as the SDK's decoder matches them.
func walk(msg []byte) (dupDepth int, err error) {
	type frame struct {
		keys    map[string]struct{}
		isObj   bool
		wantKey bool
	}
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.UseNumber() // numbers are only skipped; don't parse them
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, fmt.Errorf("malformed JSON: %w", err)
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch tok := tok.(type) {
		case json.Delim:
			switch tok {
			case '{', '[':
				if top != nil && top.isObj {
					top.wantKey = true
				}
				stack = append(stack, frame{isObj: tok == '{', wantKey: tok == '{'})
			default:
				stack = stack[:len(stack)-1]
			}
		case string:
			if top != nil && top.isObj && top.wantKey {
				if top.keys == nil {
					top.keys = make(map[string]struct{})
				}
				if _, dup := top.keys[tok]; dup && dupDepth == 0 {
					dupDepth = len(stack)
				}
				top.keys[tok] = struct{}{}
				top.wantKey = false
				continue
			}
			if top != nil && top.isObj {
				top.wantKey = true
			}
		default:
			if top != nil && top.isObj {
				top.wantKey = true
			}
		}
		if len(stack) == 0 {
			break
		}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return 0, errors.New("malformed JSON: data after the message")
	}
	return dupDepth, nil
}

// hasLoneSurrogate reports whether a JSON string in msg escapes half of a
// UTF-16 surrogate pair without the other half. msg must be valid JSON, so
// a backslash inside a string always starts an escape.
func hasLoneSurrogate(msg []byte) bool {
	inString := false
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if !inString {
			inString = c == '"'
			continue
		}
		switch c {
		case '"':
			inString = false
		case '\\':
			if msg[i+1] != 'u' {
				i++
				continue
			}
			r := hex4(msg[i+2 : i+6])
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(msg) || msg[i+1] != '\\' || msg[i+2] != 'u' {
					return true
				}
				if lo := hex4(msg[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// hex4 decodes four hex digits (already validated by the JSON walk).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// NoteRefusal records, for the access log and the request metrics, that
// the edge answered the MCP request r (asking for call) itself with the
// contract code: its tool as the route and the code with why. The server's
// counting middleware reads it back (reqinfo), so a refusal the SDK never
// saw is counted and logged with its tenant and code like REST's.
func NoteRefusal(r *http.Request, call Call, code errcode.Code, why string) {
	info := reqinfo.From(r.Context())
	if call.Tool != "" {
		info.SetRoute(call.Tool)
	}
	info.SetError(string(code), errors.New(why))
}

// rpcError builds a JSON-RPC error response; a nil id is sent as null.
func rpcError(id json.RawMessage, code int64, message string) *Reply {
	return &Reply{Body: RPCError(id, code, message), Code: code}
}

// RPCError is the body of a JSON-RPC error response to the request with
// id. It always names the id, null when the request's is unknown (JSON-RPC
// 2.0 §5: "id" is REQUIRED in a response), where the SDK's encoder leaves a
// zero id out.
func RPCError(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return body
}

// contractError is the "error" member of a tool error result (docs/contract.md#error-codes).
type contractError struct {
	Code      errcode.Code `json:"code"`
	Message   string       `json:"message"`
	Retryable bool         `json:"retryable"`
	// RetryAfterMS is set with rate_limited.
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty"`
}

// toolError builds the tools/call result the tools themselves give for
// invalid_input (docs/contract.md#error-codes), so a model reads one shape whoever refused.
func toolError(call Call, message string) *Reply {
	return toolResult(call, contractError{Code: errcode.InvalidInput, Message: message, Retryable: errcode.InvalidInput.Retryable()},
		string(errcode.InvalidInput)+": "+message+". Fix the input and call again; nothing was attempted.")
}

// toolResult builds the answer to call: a tools/call result with isError
// carrying e, and text as its one text block, shaped as the SDK shapes its
// own results for the call's protocol version: from 2026-07-28 on with
// resultType "complete" (without it the TypeScript SDK's v2 client refuses
// the result) and the server's identity in _meta.
func toolResult(call Call, e contractError, text string) *Reply {
	type content struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	result := struct {
		Meta              map[string]any `json:"_meta,omitempty"`
		Content           []content      `json:"content"`
		StructuredContent any            `json:"structuredContent"`
		IsError           bool           `json:"isError"`
		ResultType        string         `json:"resultType,omitempty"`
	}{
		Content:           []content{{Type: "text", Text: text}},
		StructuredContent: map[string]contractError{"error": e},
		IsError:           true,
	}
	if call.Version >= Protocol2026 {
		result.Meta = map[string]any{mcp.MetaKeyServerInfo: ServerInfo()}
		result.ResultType = "complete"
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", call.ID, result})
	return &Reply{Body: body}
}
