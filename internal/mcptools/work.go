package mcptools

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// shareWork runs the tool calls that are the server's work, writes and
// list pages, under work (limits.Work): at most its slots at once, and
// when all are taken each tenant's waiting calls served in turn, so one
// tenant's many calls cannot keep another's waiting behind them. A call
// past its tenant's queue gets rate_limited with retry_after_ms, held
// first by hold (the tarpit) so a caller that retries at once waits
// anyway. Other calls (get_ticket, list_projects, tools/list) are cheap
// and pass. A nil work shares nothing.
func shareWork(work *limits.Work, hold func(context.Context, time.Duration) time.Duration) mcp.Middleware {
	shared := make(map[string]bool)
	for _, t := range Tools() {
		shared[t.Name] = t.Scope != authn.ScopeRead || pageTools[t.Name]
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if work == nil {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil || !shared[call.Params.Name] {
				return next(ctx, method, req)
			}
			p, _ := principalOf(ctx, call.Extra)
			release, err := work.Acquire(ctx, p.Tenant)
			switch {
			case errors.Is(err, limits.ErrWorkQueueFull):
				return workRefusal(ctx, req, call, hold), nil
			case err != nil:
				return nil, err
			}
			defer release()
			return next(ctx, method, req)
		}
	}
}

// workRefusal is the rate_limited answer to a call past its tenant's
// work queue.
func workRefusal(ctx context.Context, req mcp.Request, call *mcp.CallToolRequest, hold func(context.Context, time.Duration) time.Duration) *mcp.CallToolResult {
	wait := limits.WorkRetryAfter
	if hold != nil {
		wait = hold(ctx, wait)
	}
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	r, out := errorResult(errcode.RateLimited,
		"the server is busy and this tenant has as many calls waiting as it may; retry after retry_after_ms",
		operationIDArgument(call), limits.ErrWorkQueueFull, "")
	out.Error.RetryAfterMS = &ms
	r.StructuredContent = out
	return asNegotiated(req, r)
}
