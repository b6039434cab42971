package mcpedge

import "testing"

// TestPeekCallIsSureOnlyOfPlainEnvelopes: peekCall reads method, tool, id
// and version as CheckMessage does, and is unsure of every message that
// could be read another way, so EarlyLimits leaves those to the full
// checks.
func TestPeekCallIsSureOnlyOfPlainEnvelopes(t *testing.T) {
	t.Parallel()
	sure := []struct {
		msg, method, tool, id, version string
	}{
		{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_ticket","arguments":{"a":[1,{"b":"}\""}]}}}`, "tools/call", "create_ticket", "7", ""},
		{` { "params" : { "arguments" : {} , "name" : "t" , "_meta" : {"x":null,"io.modelcontextprotocol/protocolVersion":"2026-07-28"} } , "method" : "tools/call" , "id" : "a\"b" } `, "tools/call", "t", `"a\"b"`, "2026-07-28"},
		{`{"id":null,"method":"notifications/initialized"}`, "notifications/initialized", "", "", ""},
		{`{"id":-3,"method":"ping","params":{}}`, "ping", "", "-3", ""},
	}
	for _, c := range sure {
		call, ok := peekCall([]byte(c.msg))
		if !ok || call.Method != c.method || call.Tool != c.tool || string(call.ID) != c.id || call.Version != c.version {
			t.Errorf("peekCall(%s) = %+v, %v; want %s %s id %s version %q", c.msg, call, ok, c.method, c.tool, c.id, c.version)
		}
		if full, reply := CheckMessage([]byte(c.msg)); reply == nil && (full.Method != call.Method || full.Tool != call.Tool || string(full.ID) != string(call.ID) || full.Version != call.Version) {
			t.Errorf("peekCall(%s) = %+v, CheckMessage %+v", c.msg, call, full)
		}
	}
	for _, msg := range []string{
		``, `[]`, `[{"id":1,"method":"tools/call"}]`, `{"id":1,"method":"tools/call"`, `{"id":1,"method":"tools/call"} x`,
		`{"id":1,"method":"tools/call","params":{"name":"create\u005fticket"}}`,
		`{"id":1,"method":"tools/\u0063all","params":{"name":"create_ticket"}}`,
		`{"id":1,"method":"tools/call","params":{"name":"list_tickets","name":"create_ticket"}}`,
		`{"id":1,"method":"tools/call","method":"ping"}`,
		`{"id":1,"id":2,"method":"tools/call"}`,
		`{"id":1.5,"method":"tools/call","params":{"name":"t"}}`,
		`{"id":9007199254740993,"method":"tools/call","params":{"name":"t"}}`,
		`{"id":{},"method":"tools/call","params":{"name":"t"}}`,
		`{"id":1,"method":7,"params":{"name":"t"}}`,
		`{"id":1,"method":"tools/call","params":{"name":["create_ticket"]}}`,
		`{"id":1,"method":"tools/call","params":"create_ticket"}`,
		"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\xff\"}}",
		`{"id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-03-26","io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
	} {
		if call, ok := peekCall([]byte(msg)); ok {
			t.Errorf("peekCall(%s) is sure (%+v), want unsure", msg, call)
		}
	}
}
