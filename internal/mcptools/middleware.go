package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// logCalls logs one line per tool call: tool, tenant, subject, operation ID,
// outcome (ok or the error code), whether it was a replay, and duration.
// Server faults (errcode.Code.ServerFault), whose cause the caller never
// sees, are logged with it. It never logs tokens or arguments
// other than the operation ID. Each tool call is also counted in metrics
// (nil: not counted), under its tool name if it names one of ours.
func logCalls(logger *slog.Logger, metrics *observe.Metrics) mcp.Middleware {
	known := make(map[string]bool)
	for _, t := range Tools() {
		known[t.def.Name] = true
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			start := time.Now()
			res, err := next(ctx, method, req)
			call, ok := req.(*mcp.CallToolRequest)
			if !ok {
				logger.DebugContext(ctx, "mcp request", "method", method, "duration", time.Since(start), "error", err)
				return res, err
			}
			d := time.Since(start)
			outcome := logToolCall(ctx, logger, call, res, err, d)
			if metrics != nil {
				// A name the client made up is not a label value: "" counts as unmatched.
				tool := call.Params.Name
				if !known[tool] {
					tool = ""
				}
				metrics.Request(observe.MCP, tool, outcome, d)
			}
			return res, err
		}
	}
}

// summarize decodes what the log line needs from a result's structured
// content, best effort: a log line must not fail a call. Content the SDK
// already holds as JSON is read in place rather than encoded again.
func summarize(content any, into any) {
	var b []byte
	switch c := content.(type) {
	case json.RawMessage:
		b = c
	case []byte:
		b = c
	default:
		var err error
		if b, err = json.Marshal(c); err != nil {
			return
		}
	}
	_ = json.Unmarshal(b, into)
}

// logToolCall logs one tool call and returns its outcome: ok or the error code.
func logToolCall(ctx context.Context, logger *slog.Logger, call *mcp.CallToolRequest, res mcp.Result, err error, d time.Duration) string {
	attrs := []slog.Attr{slog.String("tool", boundName(call.Params.Name))}
	if p, ok := principalOf(ctx, call.Extra); ok {
		attrs = append(attrs, slog.String("tenant", p.Tenant), slog.String("subject", p.Subject))
	}
	if call.Extra != nil && call.Extra.Header != nil {
		// The edge's request ID, so the line joins up with the access log.
		if id := call.Extra.Header.Get(reqinfo.Header); id != "" {
			attrs = append(attrs, slog.String("request_id", id))
		}
	}
	level, outcome := slog.LevelInfo, "ok"
	var summary struct {
		Error       *ErrorDetail `json:"error"`
		OperationID string       `json:"operation_id"`
		Replayed    *bool        `json:"replayed"`
	}
	r, _ := res.(*mcp.CallToolResult)
	switch {
	case errors.Is(err, errUnknownTool):
		// The caller's mistake, answered in full; its name is bounded above.
		level, outcome = slog.LevelWarn, "unknown_tool"
	case err != nil:
		level, outcome = slog.LevelError, "protocol_error"
		attrs = append(attrs, slog.Any("error", err))
	case r != nil:
		// A successful page carries no operation to log, and re-reading up to
		// a MiB for nothing would cost every list call a copy.
		if r.IsError || !pageTools[call.Params.Name] {
			summarize(r.StructuredContent, &summary)
		}
		if r.IsError {
			outcome = "error"
			if summary.Error != nil {
				outcome = summary.Error.Code
			}
			// The caller's problems are fully described in the answer; a
			// server fault (or an unclassified result) is logged with its
			// hidden cause.
			if summary.Error == nil || errcode.Code(outcome).ServerFault() {
				level = slog.LevelError
				attrs = append(attrs, slog.Any("error", r.GetError()))
			}
		}
	}
	opID := summary.OperationID
	if opID == "" {
		opID = operationIDArgument(call)
	}
	if opID != "" {
		attrs = append(attrs, slog.String("operation_id", opID))
	}
	attrs = append(attrs, slog.String("outcome", outcome))
	if summary.Replayed != nil {
		attrs = append(attrs, slog.Bool("replayed", *summary.Replayed))
	}
	attrs = append(attrs, slog.Duration("duration", d))
	logger.LogAttrs(ctx, level, "tool call", attrs...)
	return outcome
}

// maxToolName bounds how much of a tool name a log line or an answer
// repeats: ticketd's own are under 20 bytes, and a made-up name can be as
// long as the body.
const maxToolName = 64

// boundName returns name cut to maxToolName bytes (at a rune boundary,
// marked with "…"), for log lines and answers about a name the caller
// chose.
func boundName(name string) string {
	if len(name) <= maxToolName {
		return name
	}
	cut := maxToolName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// errUnknownTool marks boundUnknownTools' answer, so the log line knows
// the caller's mistake from a server fault.
var errUnknownTool = errors.New("unknown tool")

// boundUnknownTools rewrites the SDK's answer to a tools/call for a tool
// the server does not serve: still -32602, but naming at most maxToolName
// bytes of the name, where the SDK echoes it whole (and the log line would
// repeat it at error level).
func boundUnknownTools() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			call, ok := req.(*mcp.CallToolRequest)
			var wire *jsonrpc.Error
			if ok && call.Params != nil && errors.As(err, &wire) && wire.Code == jsonrpc.CodeInvalidParams &&
				wire.Message == fmt.Sprintf("unknown tool %q", call.Params.Name) {
				return res, &unknownTool{name: boundName(call.Params.Name)}
			}
			return res, err
		}
	}
}

// unknownTool is the JSON-RPC error boundUnknownTools returns.
type unknownTool struct{ name string }

func (e *unknownTool) Error() string { return fmt.Sprintf("unknown tool %q", e.name) }

// Unwrap gives the log its marker and the SDK the JSON-RPC code to send
// (with Error as the message).
func (e *unknownTool) Unwrap() []error {
	return []error{errUnknownTool, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams}}
}

// recoverPanics turns a panic while serving a request into an answer, so a
// bug in one call cannot end the process and every call in flight (the SDK
// has no recover of its own).
//
// A tools/call whose arguments are not a JSON object panicked because of
// the caller's input (the SDK's defaults step assigns into a nil map for
// "arguments": null): it gets invalid_input, which says to fix the call,
// and the log gets one warning line without a stack, so a flood of such
// calls cannot flood the log. Any other panic is a bug: a tool call gets
// an internal tool error (retryable with the same operation_id, which
// makes a retry after a panic safe), any other method a JSON-RPC internal
// error, and the log gets the stack.
func recoverPanics(logger *slog.Logger) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				call, ok := req.(*mcp.CallToolRequest)
				if ok && !argumentsAreObject(call) {
					logger.WarnContext(ctx, "panic on tool arguments that are not an object", "method", method, "tool", call.Params.Name, "panic", fmt.Sprint(v))
					r, out := errorResult(errcode.InvalidInput, "invalid arguments: arguments must be a JSON object (use {} for none)", "", fmt.Errorf("panic: %v", v), "")
					r.StructuredContent = out
					res, err = asNegotiated(req, r), nil
					return
				}
				logger.ErrorContext(ctx, "panic serving MCP request", "method", method, "panic", v, "stack", string(debug.Stack()))
				if !ok {
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
					return
				}
				r, out := errorResult(errcode.Internal, "internal error", operationIDArgument(call), fmt.Errorf("panic: %v", v), "")
				r.StructuredContent = out
				res, err = asNegotiated(req, r), nil
			}()
			return next(ctx, method, req)
		}
	}
}

// asNegotiated returns r as the SDK shapes a tool result it builds itself
// for req's protocol version: from 2026-07-28 on, marked resultType
// "complete" (the SDK then adds its serverInfo _meta on the way out). The
// SDK keeps the result type unexported and sets it only on results its
// tool handlers return, so a result built outside one (after a panic)
// gets it the one way the type allows, by decoding.
func asNegotiated(req mcp.Request, r *mcp.CallToolResult) *mcp.CallToolResult {
	if !newProtocol(req) {
		return r
	}
	var marked mcp.CallToolResult
	if err := json.Unmarshal([]byte(`{"content":[],"resultType":"complete"}`), &marked); err != nil {
		return r
	}
	content, structured, cause := r.Content, r.StructuredContent, r.GetError()
	marked.Content, marked.StructuredContent = content, structured
	marked.SetError(cause)
	return &marked
}

// newProtocol reports whether req was made at protocol 2026-07-28 or later,
// decided as the SDK decides it (mcp/mrtr.go, clientSupportsMultiRoundTrip):
// a session without initialize parameters is a 2026-07-28 one.
func newProtocol(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok || ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p == nil || p.ProtocolVersion >= mcpedge.Protocol2026
}

// argumentsAreObject reports whether a call's arguments are a JSON object.
func argumentsAreObject(call *mcp.CallToolRequest) bool {
	if call.Params == nil {
		return false
	}
	raw := bytes.TrimLeft(call.Params.Arguments, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{'
}

// shapeArgumentErrors gives the SDK's own argument rejections (schema
// validation: a missing or extra argument, a bad pattern, length or enum)
// the contract's error shape, so a model meets one error format whatever
// rejected its call. Handlers always set structured content, so an error
// result without it can only come from the SDK's argument checks.
func shapeArgumentErrors() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			call, isCall := req.(*mcp.CallToolRequest)
			r, isResult := res.(*mcp.CallToolResult)
			if err != nil || !isCall || !isResult || r == nil || !r.IsError || r.StructuredContent != nil {
				return res, err
			}
			cause := r.GetError()
			if cause == nil {
				cause = errors.New(contentText(r))
			}
			msg, next := argumentMessage(call.Params.Name, cause.Error())
			built, out := errorResult(errcode.InvalidInput, msg, operationIDArgument(call), cause, next)
			// A copy of the SDK's own result keeps what it set for the
			// negotiated version (resultType on 2026-07-28, which has no
			// setter); only the error's content is ours.
			shaped := *r
			shaped.Content, shaped.StructuredContent = built.Content, out
			shaped.SetError(cause)
			return &shaped, nil
		}
	}
}

// argumentMessage rewrites the SDK's validation text for a model: without
// the validator's framing, in plain words for a bad or missing operation ID
// (with a next step fitting the tool), and with a hint when the arguments
// try to name a tenant.
func argumentMessage(tool, sdk string) (msg, next string) {
	msg = strings.TrimPrefix(sdk, `validating "arguments": `)
	msg = strings.TrimPrefix(msg, "validating root: ")
	next = badOperationIDNextStep
	if tool == ToolGetOperationStatus {
		next = "Nothing can have run under a malformed operation_id; call again with the exact operation_id you passed to create_ticket."
	}
	switch {
	case strings.Contains(msg, "/properties/operation_id:"):
		return "invalid arguments: operation_id must be a UUID of version 4 or 7 in 8-4-4-4-12 hex form, " +
			"such as 0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f (the nil UUID, other versions, braces and urn:uuid: are refused)", next
	case strings.Contains(msg, "missing properties") && strings.Contains(msg, `"operation_id"`):
		return "invalid arguments: operation_id is required: the UUID (version 4 or 7) that identifies one intended ticket", next
	}
	msg = "invalid arguments: " + truncate(strings.Replace(msg, "validating /properties/", "", 1), maxArgumentMessage)
	if strings.Contains(msg, "additional properties") && strings.Contains(msg, `"tenant`) {
		msg += "; arguments never name a tenant: it comes from your access token"
	}
	return msg, ""
}

// maxArgumentMessage caps the validator's text, which quotes the offending
// value: a megabyte of bad argument must not come back twice in the answer.
const maxArgumentMessage = 300

// truncate shortens s to at most n runes (plus the mark) by cutting from
// its middle: the validator quotes the offending value first and names the
// rule it broke (the limit) last, so the end is always kept.
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n / 2
	return string(r[:head]) + "…" + string(r[len(r)-(n-head):])
}

func contentText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, " ")
}

// operationIDArgument returns the call's operation_id argument if the tool
// takes one and it is a valid operation ID (lower-cased), else "", so
// nothing odd is echoed or logged, and no error carries a member its tool's
// output schema does not allow.
func operationIDArgument(call *mcp.CallToolRequest) string {
	if call.Params == nil || len(call.Params.Arguments) == 0 || !namesOperation(call.Params.Name) {
		return ""
	}
	var args struct {
		OperationID string `json:"operation_id"`
	}
	if json.Unmarshal(call.Params.Arguments, &args) != nil {
		return ""
	}
	id, err := operations.ParseID(args.OperationID)
	if err != nil {
		return ""
	}
	return id.String()
}
