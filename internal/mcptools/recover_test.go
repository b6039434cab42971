package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestPanicsBecomeErrors: a panicking tool answers an internal tool error, a
// panic in any other method a JSON-RPC internal error, and the server keeps
// serving afterwards.
func TestPanicsBecomeErrors(t *testing.T) {
	t.Parallel()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "explode"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		panic("boom")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fine"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	panicOnList := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				panic("list exploded")
			}
			return next(ctx, method, req)
		}
	}
	s.AddReceivingMiddleware(mcptools.RecoverPanics(slog.New(slog.DiscardHandler)), panicOnList)
	cs := servertest.ConnectInMemory(t, s)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "explode"})
	if err != nil {
		t.Fatalf("a panicking tool must answer a tool error, got %v", err)
	}
	if !res.IsError {
		t.Fatalf("a panicking tool answered success")
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if e, _ := sc["error"].(map[string]any); e["code"] != "internal" || e["retryable"] != true {
		t.Errorf("structured content = %v, want a retryable internal error", res.StructuredContent)
	}
	// Built outside any tool handler, it still carries what the session's
	// protocol (2026-07-28 in memory) requires, as the SDK's own results do.
	fine, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fine"})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*mcp.CallToolResult{"the SDK's own": fine, "the panic's": res} {
		if b, _ := json.Marshal(r); !strings.Contains(string(b), `"resultType":"complete"`) {
			t.Errorf("%s result lacks resultType complete: %s", name, b)
		}
	}

	_, err = cs.ListTools(ctx, nil)
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError {
		t.Errorf("panicking tools/list: err = %v, want JSON-RPC internal error", err)
	}

	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fine"}); err != nil || res.IsError {
		t.Errorf("server did not survive the panics: %v %v", res, err)
	}
}
