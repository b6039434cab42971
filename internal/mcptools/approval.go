package mcptools

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
)

// approvalInput is the key of ticketd's one input request.
const approvalInput = "approval"

// withApprovalChannel puts into ctx what this call allows the approval gate
// (internal/approval) for asking a person, and what it brought back. It
// reads only the protocol: the client's capabilities for this request (a
// 2026-07-28 request's _meta, or a stateful session's initialize, as on
// stdio) and the retry's requestState and inputResponses — never the tool
// arguments, so a model cannot approve its own call.
//
// On stateless HTTP an older client's capabilities are unknown (each POST
// is a new session), so it is never sent input requests: the SDK would try
// to elicit over a session that cannot carry the request
// (../shared/notes/approval-mrtr.md) and fail the call. It gets
// approval_required instead.
//
// The channel is worked out only if the gate asks for it: most calls never
// do (a replay, a write no policy holds, a read), and reading the client's
// capabilities decodes the request's _meta once more, 32 KiB of the
// go-sdk's decoder per call (docs/perf.md).
func withApprovalChannel(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	return approval.WithChannel(ctx, func() approval.Channel { return approvalChannel(req) })
}

// approvalChannel is what req allows for asking (withApprovalChannel).
func approvalChannel(req *mcp.CallToolRequest) approval.Channel {
	var ch approval.Channel
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		e := caps.Elicitation
		// An empty elicitation capability is form mode (2025-06-18 clients).
		ch.Form = e.Form != nil || e.URL == nil
		ch.URL = e.URL != nil
	}
	if req.Params != nil {
		ch.State = req.Params.RequestState
		if r, ok := req.Params.InputResponses[approvalInput].(*mcp.ElicitResult); ok && r != nil {
			approve, _ := r.Content["approve"].(bool)
			ch.Answer = &approval.Answer{Action: r.Action, Approve: approve}
		}
	}
	return ch
}

// askForApproval turns the gate's answer into the protocol's: an
// input_required result with a form or URL elicitation, or for a request
// state that fails verification, JSON-RPC -32602. ok is false for any other
// error, which becomes a tool error as usual (approval_required with the
// URL when the client can be asked neither way).
func askForApproval(err error) (res *mcp.CallToolResult, rpcErr error, ok bool) {
	if errors.Is(err, approval.ErrBadState) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}, true
	}
	var req *approval.RequiredError
	if !errors.As(err, &req) || req.Mode == approval.ModeNone {
		return nil, nil, false
	}
	a := req.Approval
	var ask *mcp.ElicitParams
	switch req.Mode {
	case approval.ModeForm:
		ask = &mcp.ElicitParams{
			Mode: "form",
			Message: fmt.Sprintf("%s Approve it? (This approval expires at %s.)", a.Proposal.Summary,
				a.ExpiresAt.Format("15:04:05 MST")),
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"approve": map[string]any{
						"type": "boolean", "title": "Approve",
						"description": "Yes to let the agent make exactly this change; no to refuse it.",
					},
				},
				"required": []string{"approve"},
			},
		}
	default:
		ask = &mcp.ElicitParams{
			Mode:    "url",
			Message: a.Proposal.Summary + " Open the page to see exactly what will change and approve or decline it.",
			URL:     req.URL, ElicitationID: a.ID,
		}
	}
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{approvalInput: ask}, RequestState: req.State}, nil, true
}
