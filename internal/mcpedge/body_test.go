package mcpedge_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/mcpedge"
)

// versions are the protocol versions a client may send; "" is a client that
// sends no MCP-Protocol-Version header.
var versions = []string{"", "2025-03-26", "2025-06-18", "2026-07-28"}

func versionHeader(v string) http.Header {
	if v == "" {
		return nil
	}
	return http.Header{"Mcp-Protocol-Version": {v}}
}

func TestMCPBodyRefusesBatchesInEveryVersion(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	url := guarded(t, s, mcpedge.Body(1<<20))
	batch := " \n\t[" + `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_thing","arguments":{}}},` +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}]`
	for _, v := range versions {
		t.Run("Version"+v, func(t *testing.T) {
			t.Parallel()
			status, resp := post(t, url, batch, versionHeader(v))
			if status != http.StatusBadRequest || resp.Error == nil || resp.Error.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("batch answered %d %+v, want 400 with a -32600 JSON-RPC error", status, resp.Error)
			}
			if string(resp.ID) != "null" {
				t.Errorf("id = %s, want null", resp.ID)
			}
		})
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("a batched tool ran %d times", n)
	}
}

func TestMCPBodyInvalidInputIsAToolError(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	url := guarded(t, s, mcpedge.Body(1<<20))
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":` + params + `}`
	}
	tests := []struct {
		name, body, wantMessage string
	}{
		{"ArgumentsNull", call(`{"name":"read_thing","arguments":null}`), "arguments must be a JSON object"},
		{"ArgumentsString", call(`{"name":"read_thing","arguments":"{}"}`), "arguments must be a JSON object"},
		{"ArgumentsArray", call(`{"name":"read_thing","arguments":[]}`), "arguments must be a JSON object"},
		{"ArgumentsNumber", call(`{"name":"read_thing","arguments":5}`), "arguments must be a JSON object"},
		{"DuplicateToolName", call(`{"name":"read_thing","name":"write_thing","arguments":{}}`), "duplicate object key"},
		{"DuplicateArgument", call(`{"name":"read_thing","arguments":{"text":"a","text":"b"}}`), "duplicate object key"},
		{"DuplicateDeepKey", call(`{"name":"read_thing","arguments":{"nested":{"a":[{"b":{"c":1,"c":1}}]}}}`), "duplicate object key"},
		{"InvalidUTF8", call("{\"name\":\"read_thing\",\"arguments\":{\"text\":\"caf\xe9\"}}"), "not valid UTF-8"},
		{"InvalidUTF8InKey", call("{\"name\":\"read_thing\",\"arguments\":{\"t\xffext\":\"x\"}}"), "not valid UTF-8"},
		{"LoneHighSurrogate", call(`{"name":"read_thing","arguments":{"text":"a\ud800"}}`), "unpaired UTF-16 surrogate"},
		{"LoneLowSurrogate", call(`{"name":"read_thing","arguments":{"text":"\udc00b"}}`), "unpaired UTF-16 surrogate"},
		{"HighThenNotLow", call(`{"name":"read_thing","arguments":{"text":"\ud800\u0041"}}`), "unpaired UTF-16 surrogate"},
		{"SurrogateInKey", call(`{"name":"read_thing","arguments":{"\uDBFFx":"y"}}`), "unpaired UTF-16 surrogate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, v := range versions {
				status, resp := post(t, url, tt.body, versionHeader(v))
				if status != http.StatusOK || resp.Result == nil || !resp.Result.IsError {
					t.Fatalf("version %q: answered %d %+v, want 200 with an isError tool result", v, status, resp)
				}
				got := resp.Result.StructuredContent.Error
				if got.Code != "invalid_input" || got.Retryable || !strings.Contains(got.Message, tt.wantMessage) {
					t.Errorf("version %q: error = %+v, want invalid_input, not retryable, mentioning %q", v, got, tt.wantMessage)
				}
				if string(resp.ID) != `"call-1"` {
					t.Errorf("version %q: id = %s, want the request's", v, resp.ID)
				}
				if len(resp.Result.Content) != 1 || !strings.Contains(resp.Result.Content[0].Text, "Fix the input") {
					t.Errorf("version %q: text block %+v does not say what to do next", v, resp.Result.Content)
				}
			}
		})
	}
	if n := s.calls.Load(); n != 0 {
		t.Errorf("tools ran %d times on refused input", n)
	}
}

func TestMCPBodyRefusalsWithoutAResult(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	url := guarded(t, s, mcpedge.Body(4096))
	tests := []struct {
		name, body string
		version    string
		wantStatus int
		wantCode   int64
		wantID     string
	}{
		{"NotJSON", `{"jsonrpc":"2.0",`, "", 400, jsonrpc.CodeParseError, "null"},
		{"TrailingData", `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, "", 400, jsonrpc.CodeParseError, "null"},
		{"NotAnObject", `"ping"`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"DuplicateID", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"DuplicateMethod", `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"ParamsNotObject", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":null}`, "2026-07-28", 400, jsonrpc.CodeInvalidParams, "7"},
		{"BadUTF8InPingLegacy", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", "2025-06-18", 200, jsonrpc.CodeInvalidParams, "7"},
		{"BadUTF8InPing", "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}", "2026-07-28", 400, jsonrpc.CodeInvalidParams, "7"},
		{"BadUTF8InNotification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\",\"params\":{\"x\":\"\xff\"}}", "2026-07-28", 400, jsonrpc.CodeInvalidParams, "null"},
		{"TooLarge", `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, "", 413, jsonrpc.CodeInvalidRequest, "null"},
		// The SDK would answer these ids as 1, 1, 1000, 2^53 and 0: refused, never answered as another id.
		{"FractionalID", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"FractionalToolCallID", `{"jsonrpc":"2.0","id":1.0,"method":"tools/call","params":{"name":"read_thing","arguments":{}}}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"ExponentID", `{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"InexactID", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
		{"NegativeZeroID", `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, "", 400, jsonrpc.CodeInvalidRequest, "null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			status, resp := post(t, url, tt.body, versionHeader(tt.version))
			if status != tt.wantStatus || resp.Error == nil || resp.Error.Code != tt.wantCode {
				t.Fatalf("answered %d %+v, want %d with JSON-RPC error %d", status, resp.Error, tt.wantStatus, tt.wantCode)
			}
			if string(resp.ID) != tt.wantID {
				t.Errorf("id = %s, want %s", resp.ID, tt.wantID)
			}
		})
	}
}

func TestMCPBodyUndeclaredMethods(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	url := guarded(t, s, mcpedge.Body(1<<20))
	methods := []string{"resources/subscribe", "resources/unsubscribe", "logging/setLevel", "sampling/createMessage", "elicitation/create"}
	for _, m := range methods {
		t.Run(strings.ReplaceAll(m, "/", "_"), func(t *testing.T) {
			t.Parallel()
			body := `{"jsonrpc":"2.0","id":3,"method":"` + m + `","params":{}}`
			for v, want := range map[string]int{"2026-07-28": http.StatusNotFound, "2025-06-18": http.StatusOK, "": http.StatusOK} {
				status, resp := post(t, url, body, versionHeader(v))
				if status != want || resp.Error == nil || resp.Error.Code != jsonrpc.CodeMethodNotFound || string(resp.ID) != "3" {
					t.Errorf("version %q: answered %d %+v id %s, want %d with -32601 for id 3", v, status, resp.Error, resp.ID, want)
				}
			}
		})
	}

	// A go-sdk client's session works for what the server does declare
	// (the refused methods above are all the client's deprecated or
	// replaced ones, sent by hand).
	session, _ := connect(t, url, "")
	// ping stays allowed. The go-sdk v1.8 client's own Ping fails on
	// protocol 2026-07-28 (it omits the protocolVersion _meta the server
	// requires), with or without this guard, so ping is sent by hand.
	for _, v := range []string{"", "2025-06-18"} {
		status, resp := post(t, url, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, versionHeader(v))
		if status != http.StatusOK || resp.Error != nil || string(resp.ID) != "9" {
			t.Errorf("version %q: ping answered %d %+v, want 200 with a result", v, status, resp.Error)
		}
	}
	if _, err := session.ListTools(t.Context(), nil); err != nil {
		t.Fatalf("tools/list after refused methods: %v", err)
	}
}

// TestMCPBodyPassesValidInput drives the guarded server with the go-sdk
// client: what the guard lets through reaches the tool byte for byte, and
// the Call it peeked is in the context of the handler after it.
func TestMCPBodyPassesValidInput(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, nil)
	var seen []mcpedge.Call
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if c, ok := mcpedge.CallFrom(r.Context()); ok && c.Method == "tools/call" {
				seen = append(seen, c)
			}
			next.ServeHTTP(w, r)
		})
	}
	url := guarded(t, s, mcpedge.Body(1<<20), record)
	session, _ := connect(t, url, "")
	args := map[string]any{
		"text": "😀 café \\ud800 \"quoted\"",
		// Keys differing in case are different keys to the SDK, and the
		// same key in sibling objects is no duplicate.
		"nested": map[string]any{"name": 1, "NAME": 2, "a": map[string]any{"x": 1}, "b": map[string]any{"x": 1}, "list": []any{map[string]any{"x": 1}, map[string]any{"x": 1}}},
	}
	res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_thing", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %+v", err, res)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(s.last.Load().(string)), &got); err != nil {
		t.Fatal(err)
	}
	if got["text"] != args["text"] || got["priority"] != "normal" {
		t.Errorf("tool ran with %v, want the text unchanged and priority defaulted", got)
	}
	if len(seen) != 1 || seen[0].Tool != "read_thing" || len(seen[0].ID) == 0 {
		t.Errorf("CallFrom saw %+v, want one tools/call of read_thing with its id", seen)
	}
	if _, err := session.ListTools(t.Context(), nil); err != nil {
		t.Errorf("tools/list: %v", err)
	}
}

func TestCheckMessagePasses(t *testing.T) {
	t.Parallel()
	for name, msg := range map[string]string{
		"SurrogatePair":       `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"t":"\ud83d\ude00"}}}`,
		"EscapedBackslashU":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"t":"\\ud800 \\\"\\udc00"}}}`,
		"NoArguments":         `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
		"ArgumentsWhitespace": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments": {} }}`,
		"Notification":        `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"ClientResponse":      `{"jsonrpc":"2.0","id":4,"result":{}}`,
		"Initialize":          `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		"Discover":            `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, reply := mcpedge.CheckMessage([]byte(msg)); reply != nil {
				t.Errorf("refused with %s", reply.Body)
			}
		})
	}
}
