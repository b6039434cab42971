package mcptools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxConcurrentPages bounds how many list pages the server builds at
// once. A page is capped at about 1 MiB of JSON (tickets.MaxPageBytes), but
// the SDK holds several copies of it while it encodes and validates the
// result (about 13 MiB per full page, measured), so 40 hostile list calls at
// once reached 538 MiB, and 329 MiB with 8 at a time (scripts/edge-measure.sh).
// Building a full page is CPU-bound, so more at once than about two per core
// adds memory, not throughput; small pages take milliseconds and barely wait.
const DefaultMaxConcurrentPages = 4

// PageBytes bounds the structured content of one list_tickets answer
// (docs/contract.md#lists-and-the-context-budget): a page stops before its items would pass it, and
// next_cursor continues, so one call never floods a model's context.
const PageBytes = 64 << 10

// pageItemsBudget is what a page's items may take of PageBytes: the rest is
// the envelope ({"tickets":[…],"next_cursor":…}, a cursor of at most
// maxCursor bytes).
const pageItemsBudget = PageBytes - maxCursor - 64

// measureItem is an item's size in a page: its JSON and the comma after it.
func measureItem(v any) (int, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("measure list item: %w", err)
	}
	return len(b) + 1, nil
}

// pageTools are the tools whose answer is a page of up to a MiB.
var pageTools = map[string]bool{ToolListTickets: true, ToolListComments: true}

// boundPages lets at most n page-building calls run at once across the
// server; the others wait their turn (or give up when their caller does),
// so memory stays bounded however many callers list at once.
func boundPages(n int) mcp.Middleware {
	if n <= 0 {
		n = DefaultMaxConcurrentPages
	}
	slots := make(chan struct{}, n)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil || !pageTools[call.Params.Name] {
				return next(ctx, method, req)
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			defer func() { <-slots }()
			return next(ctx, method, req)
		}
	}
}
