package mcpedge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

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

// methodAllowed lists what ticketd serves: tools, resources (templates,
// read; no subscriptions), prompts and completion are declared, yet the SDK
// dispatches logging/* and resources/subscribe from a fixed table, so
// anything else is refused here with -32601 (the 2026-07-28 conformance
// rule for undeclared capabilities).
func methodAllowed(m string) bool {
	switch m {
	case "initialize", "ping", "server/discover", "tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read",
		"prompts/list", "prompts/get", "completion/complete":
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
//
// It reads msg once (pass), for every rule at a time, and a typical call
// allocates only the id and tool name its Call holds; until issue 21 it
// took json.Valid, a key scan, two byte scans and four encoding/json
// decodes (docs/perf.md).
func CheckMessage(msg []byte) (Call, *Reply) {
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported; send one request per message")
	}
	p := pass{b: msg}
	if !p.message() {
		return Call{}, rpcError(nil, jsonrpc.CodeParseError, "parse error: "+malformed(msg).Error())
	}
	call, reply := p.call()
	if reply != nil {
		return call, reply
	}

	// Byte-level and structural rules, answered in the form the message
	// allows.
	var problem string
	switch {
	case p.badUTF8:
		problem = "input is not valid UTF-8"
	case p.lone:
		problem = `input contains an unpaired UTF-16 surrogate escape (\uD800-\uDFFF)`
	case p.dupDepth > 0:
		problem = "input has a duplicate object key; each key may appear once per object"
	}
	if call.Method == "" {
		// A response from the client: nothing of ours to answer.
		if problem != "" {
			return call, rpcError(nil, jsonrpc.CodeInvalidRequest, problem)
		}
		return call, nil
	}
	if call.Method == "tools/call" && problem == "" && p.args != nil && p.args[0] != '{' {
		problem = "arguments must be a JSON object (use {} for a tool without arguments)"
	}
	if problem != "" {
		if call.Method == "tools/call" && call.ID != nil {
			return call, toolError(call, problem)
		}
		return call, rpcError(call.ID, jsonrpc.CodeInvalidParams, problem)
	}
	if !methodAllowed(call.Method) {
		return call, rpcError(call.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not supported: this server declares tools, resources, prompts and completion", call.Method))
	}
	return call, nil
}

// call reads the Call from the envelope members p kept, as encoding/json
// decodes them (the id as sent, method, params.name and _meta's version
// unquoted). The Reply is non-nil when the envelope itself cannot be
// trusted.
func (p *pass) call() (Call, *Reply) {
	// null decodes into a map as no envelope at all: a response, passed.
	if p.top != '{' && p.top != 'n' {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "a JSON-RPC message must be a JSON object")
	}
	if p.dupDepth == 1 {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "duplicate member in the JSON-RPC envelope")
	}
	var call Call
	if p.id != nil && string(p.id) != "null" {
		// A copy, as encoding/json made: a Call may outlive msg's buffer
		// (stdio reads each line into the same one).
		call.ID = bytes.Clone(p.id)
	}
	if !idExact(call.ID) {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "id must be a string or an integer of at most 2^53 in magnitude, so that the answer can carry it back exactly")
	}
	switch {
	case p.method == nil || p.method[0] == 'n':
	case p.method[0] != '"':
		return call, rpcError(call.ID, jsonrpc.CodeInvalidRequest, "method must be a string")
	default:
		call.Method = unquote(p.method)
	}
	if call.Method == "tools/call" {
		if p.params == nil || p.params[0] != '{' {
			return call, rpcError(call.ID, jsonrpc.CodeInvalidParams, "tools/call params must be an object")
		}
		// A non-string name is left to the SDK, which refuses it.
		if p.name != nil && p.name[0] == '"' {
			call.Tool = unquote(p.name)
		}
	}
	// Best effort: a _meta the SDK cannot read is the SDK's to refuse.
	if p.version != nil && !p.versionBad {
		call.Version = unquote(p.version)
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
