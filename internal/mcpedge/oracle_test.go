package mcpedge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// oracleCheckMessage is CheckMessage as it was before issue 21 made it one
// pass, kept as the oracle the one pass must agree with on every input.
// Its own words follow.
//
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
func oracleCheckMessage(msg []byte) (Call, *Reply) {
	trimmed := bytes.TrimLeft(msg, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return Call{}, rpcError(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not supported; send one request per message")
	}
	dupDepth, err := oracleWalk(msg)
	if err != nil {
		return Call{}, rpcError(nil, jsonrpc.CodeParseError, "parse error: "+err.Error())
	}
	call, params, reply := oracleEnvelope(msg, dupDepth)
	if reply != nil {
		return call, reply
	}

	// Byte-level and structural rules, answered in the form the message
	// allows.
	var problem string
	switch {
	case !utf8.Valid(msg):
		problem = "input is not valid UTF-8"
	case oracleLoneSurrogate(msg):
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
		return call, rpcError(call.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not supported: this server declares tools, resources, prompts and completion", call.Method))
	}
	return call, nil
}

// oracleEnvelope reads the JSON-RPC envelope of msg, which walk found to be
// one JSON value whose first duplicate key is at dupDepth: the Call, and the
// params of a tools/call. The Reply is non-nil when the envelope itself
// cannot be trusted.
func oracleEnvelope(msg []byte, dupDepth int) (Call, map[string]json.RawMessage, *Reply) {
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

// oracleWalk checks that msg is exactly one JSON value and reports the depth of
// the first object holding a duplicate key (1 = the top-level object), or 0.
// Keys compare case-sensitively, as the SDK's decoder matches them. A valid
// message costs one validating pass and one scan that allocates nothing
// for a typical call; until issue 21 a token-by-token decode did both, at
// about 170 allocations per call (docs/perf.md).
func oracleWalk(msg []byte) (dupDepth int, err error) {
	if !json.Valid(msg) {
		return 0, malformed(msg)
	}
	return oracleDuplicates(msg), nil
}

// oracleFrame is one open object or array of duplicates' scan.
type oracleFrame struct {
	isObj bool
	start int                 // this object's first key in keys
	set   map[string]struct{} // past smallObject keys
}

// oracleDuplicates returns the depth of the first object holding a duplicate key
// in msg (1 = the top-level object), or 0. msg must be valid JSON
// (json.Valid): the scan only tracks strings and brackets. Keys compare as
// encoding/json decodes them, escapes and invalid UTF-8 included, but a
// key is decoded only when it has a backslash or a non-ASCII byte, so a
// typical message costs no allocation beyond a deep nesting's stack.
func oracleDuplicates(msg []byte) int {
	var (
		stackBuf [16]oracleFrame
		keysBuf  [64][]byte
		stack    = stackBuf[:0]
		keys     = keysBuf[:0]
	)
	wantKey := false
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; c {
		case '{', '[':
			stack = append(stack, oracleFrame{isObj: c == '{', start: len(keys)})
			wantKey = c == '{'
		case '}', ']':
			top := stack[len(stack)-1]
			keys = keys[:top.start]
			stack = stack[:len(stack)-1]
			wantKey = false
		case ',':
			wantKey = stack[len(stack)-1].isObj
		case '"':
			end := oracleStringEnd(msg, i)
			if wantKey {
				top := &stack[len(stack)-1]
				k := oracleKey(msg[i : end+1])
				if top.set == nil && len(keys)-top.start >= smallObject {
					top.set = make(map[string]struct{}, 2*smallObject)
					for _, old := range keys[top.start:] {
						top.set[string(old)] = struct{}{}
					}
				}
				dup := false
				if top.set != nil {
					_, dup = top.set[string(k)]
					top.set[string(k)] = struct{}{}
				} else {
					for _, old := range keys[top.start:] {
						if bytes.Equal(old, k) {
							dup = true
							break
						}
					}
				}
				if dup {
					return len(stack)
				}
				keys = append(keys, k)
				wantKey = false
			}
			i = end
		}
	}
	return 0
}

// oracleStringEnd returns the index of the quote closing the string that opens
// at msg[start].
func oracleStringEnd(msg []byte, start int) int {
	for i := start + 1; i < len(msg); i++ {
		switch msg[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(msg) - 1
}

// oracleKey returns a JSON string's value as encoding/json decodes it: msg's own
// bytes when nothing needs decoding.
func oracleKey(quoted []byte) []byte {
	raw := quoted[1 : len(quoted)-1]
	plain := bytes.IndexByte(raw, '\\') < 0
	for _, b := range raw {
		if b >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		return raw
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid JSON: cannot fail
	return []byte(s)
}

// oracleLoneSurrogate reports whether a JSON string in msg escapes half of a
// UTF-16 surrogate pair without the other half. msg must be valid JSON, so
// a backslash inside a string always starts an escape.
func oracleLoneSurrogate(msg []byte) bool {
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
			r := oracleHex4(msg[i+2 : i+6])
			i += 5
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(msg) || msg[i+1] != '\\' || msg[i+2] != 'u' {
					return true
				}
				if lo := oracleHex4(msg[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// oracleHex4 decodes four hex digits (already validated by the JSON walk).
func oracleHex4(b []byte) rune {
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
