package mcpedge_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/mcpedge"
)

// FuzzCheckMessage feeds CheckMessage arbitrary bodies: it must never
// panic, every refusal must be one JSON-RPC message, and what it passes
// must be one valid, UTF-8, surrogate-clean JSON object, so the SDK reads
// exactly what the guard read.
func FuzzCheckMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":"\ud83d\ude00"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":null}}`,
		`{"a":1,"a":2}`, `[1]`, `"\ud800"`, `{"x":"\\ud800"}`, "{\"x\":\"\xff\"}", `{"jsonrpc":"2.0","method":"ping"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		_, reply := mcpedge.CheckMessage(msg)
		if reply != nil {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(reply.Body, &m); err != nil || string(m["jsonrpc"]) != `"2.0"` {
				t.Fatalf("refusal is not a JSON-RPC message: %s", reply.Body)
			}
			return
		}
		if !json.Valid(msg) || !utf8.Valid(msg) {
			t.Fatalf("passed invalid JSON or UTF-8: %q", msg)
		}
		if trimmed := bytes.TrimLeft(msg, " \t\r\n"); trimmed[0] != '{' {
			t.Fatalf("passed a message that is not an object: %q", msg)
		}
		// A lone surrogate decodes to U+FFFD; a passed message must not
		// gain one in decoding that its bytes did not already hold.
		var v any
		if err := json.Unmarshal(msg, &v); err != nil {
			t.Fatal(err)
		}
		re, _ := json.Marshal(v)
		lower := bytes.ToLower(msg)
		if bytes.Count(re, []byte("\ufffd")) > bytes.Count(msg, []byte("\ufffd"))+bytes.Count(lower, []byte(`\ufffd`)) {
			t.Fatalf("passed a message whose decoding invents U+FFFD: %q", msg)
		}
	})
}
