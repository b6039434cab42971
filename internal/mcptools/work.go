package mcptools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
)

// admit admits the tool calls that are the server's work, writes and
// list pages, through admission (limits.Admission), the door REST's goes
// through too: a list page takes one of its tenant's page slots and then
// a work slot, a write a work slot. A tenant alone may use every slot;
// beyond what is free a call waits its turn, and each tenant's waiting
// calls are served in turn, so one tenant's many calls cannot keep
// another's waiting behind them. A call past the wait bound or its
// tenant's queue gets rate_limited with retry_after_ms, held first by hold
// (the tarpit) so a caller that retries at once waits anyway. A
// resources/read or prompts/get, which reads up to a page of tickets, is
// admitted as a list page (admitRead). Other calls (get_ticket,
// list_projects, tools/list, completion) are cheap and pass. A nil
// admission admits every call at once.
func admit(admission *limits.Admission, hold func(context.Context, string, time.Duration) time.Duration) mcp.Middleware {
	shared := make(map[string]bool)
	for _, t := range Tools() {
		shared[t.Name] = t.Scope != authn.ScopeRead || pageTools[t.Name]
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if admission == nil {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if readsPage(req) {
				return admitRead(ctx, admission, hold, method, req, next)
			}
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil || !shared[call.Params.Name] {
				return next(ctx, method, req)
			}
			p, _ := principalOf(ctx, call.Extra)
			ctx, release, err := admission.Admit(ctx, p.Tenant, pageTools[call.Params.Name])
			switch {
			case errors.Is(err, limits.ErrWorkQueueFull):
				return workRefusal(ctx, p.Tenant, req, call, hold, "the server is busy and this tenant has as many calls waiting as it may", err), nil
			case errors.Is(err, limits.ErrAdmissionWait):
				return workRefusal(ctx, p.Tenant, req, call, hold, "the server is busy and this call waited its turn as long as it may", err), nil
			case err != nil:
				return nil, err
			}
			defer release()
			return next(ctx, method, req)
		}
	}
}

// workRefusal is the rate_limited answer to tenant's call admission
// refused for why (cause).
func workRefusal(ctx context.Context, tenant string, req mcp.Request, call *mcp.CallToolRequest, hold func(context.Context, string, time.Duration) time.Duration, why string, cause error) *mcp.CallToolResult {
	wait := limits.WorkRetryAfter
	if hold != nil {
		wait = hold(ctx, tenant, wait)
	}
	ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
	r, out := errorResult(errcode.RateLimited, why+"; retry after retry_after_ms", operationIDArgument(call), cause, "")
	out.Error.RetryAfterMS = &ms
	r.StructuredContent = out
	return asNegotiated(req, r)
}

// readsPage reports whether req reads up to a page of tickets without
// being a tool call: a resource (a project's open tickets, a ticket's
// latest comments) or a prompt filled from them.
func readsPage(req mcp.Request) bool {
	switch req.(type) {
	case *mcp.ReadResourceRequest, *mcp.GetPromptRequest:
		return true
	}
	return false
}

// admitRead admits a resource or prompt read as a list page; a refusal is
// a JSON-RPC error (there is no tool result to carry it) with the
// contract's code and retry_after_ms, as the edge's rate limit sends it.
func admitRead(ctx context.Context, admission *limits.Admission, hold func(context.Context, string, time.Duration) time.Duration,
	method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	p, _ := principalOf(ctx, req.GetExtra())
	ctx, release, err := admission.Admit(ctx, p.Tenant, true)
	switch {
	case errors.Is(err, limits.ErrWorkQueueFull), errors.Is(err, limits.ErrAdmissionWait):
		wait := limits.WorkRetryAfter
		if hold != nil {
			wait = hold(ctx, p.Tenant, wait)
		}
		ms := int64(math.Ceil(float64(wait) / float64(time.Millisecond)))
		data, _ := json.Marshal(map[string]any{"code": errcode.RateLimited, "retryable": true, "retry_after_ms": ms})
		return nil, &jsonrpc.Error{Code: codeRateLimited, Message: fmt.Sprintf("%s: the server is busy; retry after %d ms", errcode.RateLimited, ms), Data: data}
	case err != nil:
		return nil, err
	}
	defer release()
	return next(ctx, method, req)
}

// codeRateLimited is the JSON-RPC code of rate_limited outside a tool
// result, as the edge sends it (mcpedge).
const codeRateLimited = -32000
