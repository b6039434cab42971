package mcpedge

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/errcode"
)

// TestToolResultIsShapedForItsVersion: the refusal a tools/call gets is the
// JSON-RPC result the SDK would send, at each version: the call's id, one
// text block, the contract error as structured content, and from
// 2026-07-28 on resultType "complete" and the server's identity in _meta
// (encoded once, serverInfoMeta), before it none of either.
func TestToolResultIsShapedForItsVersion(t *testing.T) {
	t.Parallel()
	ms := int64(1500)
	e := contractError{Code: errcode.RateLimited, Message: "slow down", Retryable: true, RetryAfterMS: &ms}
	for _, version := range []string{"2025-06-18", Protocol2026} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			reply := toolResult(Call{ID: json.RawMessage(`"seven"`), Method: "tools/call", Tool: "create_ticket", Version: version}, e, "retry later")
			var msg struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Result  struct {
					Meta              map[string]json.RawMessage `json:"_meta"`
					Content           []map[string]string        `json:"content"`
					StructuredContent map[string]contractError   `json:"structuredContent"`
					IsError           bool                       `json:"isError"`
					ResultType        *string                    `json:"resultType"`
				} `json:"result"`
			}
			if err := json.Unmarshal(reply.Body, &msg); err != nil || reply.Code != 0 {
				t.Fatalf("body %s (code %d): %v", reply.Body, reply.Code, err)
			}
			r := msg.Result
			if msg.JSONRPC != "2.0" || string(msg.ID) != `"seven"` || !r.IsError ||
				!reflect.DeepEqual(r.Content, []map[string]string{{"type": "text", "text": "retry later"}}) ||
				!reflect.DeepEqual(r.StructuredContent, map[string]contractError{"error": e}) {
				t.Fatalf("body %s: want the call's id, the text block and the contract error", reply.Body)
			}
			if version < Protocol2026 {
				if r.Meta != nil || r.ResultType != nil {
					t.Errorf("at %s: _meta %v, resultType %v, want neither", version, r.Meta, r.ResultType)
				}
				return
			}
			var info mcp.Implementation
			if err := json.Unmarshal(r.Meta[mcp.MetaKeyServerInfo], &info); err != nil || !reflect.DeepEqual(info, *ServerInfo()) {
				t.Errorf("_meta %s: serverInfo %+v (%v), want %+v", reply.Body, info, err, *ServerInfo())
			}
			if r.ResultType == nil || *r.ResultType != "complete" {
				t.Errorf("resultType %v, want complete", r.ResultType)
			}
		})
	}
}
