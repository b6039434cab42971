package mcpedge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	call, params, reply := readEnvelope(msg, dupDepth)
	if reply != nil {
		return call, reply
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

// readEnvelope reads the JSON-RPC envelope of msg, which walk found to be
// one JSON value whose first duplicate key is at dupDepth: the Call, and the
// params of a tools/call. The Reply is non-nil when the envelope itself
// cannot be trusted.
func readEnvelope(msg []byte, dupDepth int) (Call, map[string]json.RawMessage, *Reply) {
	var env map[string]json.RawMessage
	if err := json.Unmarshal(msg, &env); err != nil {
		return Call{}, nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	if dupDepth == 1 {
		return Call{}, nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "duplicate member in the JSON-RPC envelope")
	}
	call := Call{ID: env["id"]}
	if string(call.ID) == "null" {
		call.ID = nil
	}
	if !idExact(call.ID) {
		return Call{}, nil, rpcError(nil, jsonrpc.CodeInvalidRequest, "id must be a string or an integer of at most 2^53 in magnitude, so that the answer can carry it back exactly")
	}
	if raw, ok := env["method"]; ok {
		if err := json.Unmarshal(raw, &call.Method); err != nil {
			return call, nil, rpcError(call.ID, jsonrpc.CodeInvalidRequest, "method must be a string")
		}
	}
	var params map[string]json.RawMessage
	if call.Method == "tools/call" {
		if err := json.Unmarshal(env["params"], &params); err != nil || params == nil {
			return call, nil, rpcError(call.ID, jsonrpc.CodeInvalidParams, "tools/call params must be an object")
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
	return call, params, nil
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
