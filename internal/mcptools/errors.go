package mcptools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// ErrorDetail is the error member of a tool error result (docs/contract.md#error-codes).
type ErrorDetail struct {
	Code      string `json:"code" jsonschema:"Stable, machine-readable error code."`
	Message   string `json:"message" jsonschema:"What went wrong."`
	Retryable bool   `json:"retryable" jsonschema:"Whether repeating the same call (same operation_id, same arguments) can succeed."`
	// RetryAfterMS comes with rate_limited: how long to wait before the
	// retry.
	RetryAfterMS *int64 `json:"retry_after_ms,omitempty" jsonschema:"With rate_limited: wait this many milliseconds before retrying."`
}

// ErrorOut is the structured content of every tool error result
// (isError: true). Its text block repeats it and says what to do next.
type ErrorOut struct {
	Error       ErrorDetail `json:"error"`
	OperationID string      `json:"operation_id,omitempty" jsonschema:"The operation_id the error is about, when there is one."`
	Status      string      `json:"status,omitempty" jsonschema:"unknown with outcome_unknown, pending with operation_in_progress."`
	// CurrentVersion and Ticket come with version_conflict, so the caller
	// can decide again without another round trip.
	CurrentVersion int64            `json:"current_version,omitempty" jsonschema:"With version_conflict: the ticket's version now."`
	Ticket         *contract.Ticket `json:"ticket,omitempty" jsonschema:"With version_conflict: the ticket as it is now."`
	// The approval fields come with approval_required (docs/contract.md#approval).
	ApprovalURL string     `json:"approval_url,omitempty" jsonschema:"With approval_required: the page where the user approves or declines this exact change (signed in as you)."`
	ApprovalID  string     `json:"approval_id,omitempty" jsonschema:"With approval_required: the approval's ID."`
	ExpiresAt   *time.Time `json:"expires_at,omitempty" jsonschema:"With approval_required: retry before this time; after it, the retry asks again."`
}

// outcome is a tool's structured result: the success value or the error,
// never both. It marshals as whichever is set, so one tool has one output
// schema (success or error) and the SDK still validates every answer.
type outcome[T any] struct {
	ok  *T
	err *ErrorOut
}

// MarshalJSON encodes the error if there is one, else the success value.
func (o outcome[T]) MarshalJSON() ([]byte, error) {
	if o.err != nil {
		return json.Marshal(o.err)
	}
	if o.ok == nil {
		return nil, errors.New("tool outcome has neither a result nor an error")
	}
	// Asked of the pointer: a copy of *o.ok in an interface would escape.
	if page, ok := any(o.ok).(interface{ pageJSON() ([]byte, bool) }); ok {
		if b, ok := page.pageJSON(); ok {
			return b, nil
		}
	}
	return json.Marshal(o.ok)
}

// success answers a call with v; its JSON is the text block too, unless v
// has a text of its own (a summary where the JSON would be long).
func success[T any](v T) (*mcp.CallToolResult, outcome[T], error) {
	if t, ok := any(&v).(interface{ text() string }); ok {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: t.text()}}}, outcome[T]{ok: &v}, nil
	}
	return nil, outcome[T]{ok: &v}, nil
}

// failure answers a call with the tool error for err, classified by the one
// contract classifier; what the caller reads follows the error table's one
// policy (errcode.Code.Message), and a hidden cause goes only to the log.
func failure[T any](err error, operationID string) (*mcp.CallToolResult, outcome[T], error) {
	code := errcode.Of(err)
	next := ""
	var invalid *tickets.ValidationError
	if errors.As(err, &invalid) && slices.ContainsFunc(invalid.Fields, func(f tickets.FieldError) bool {
		return f.Field == "operation_id"
	}) {
		next = badOperationIDNextStep
	}
	if errors.Is(err, tickets.ErrUnknownProject) {
		next = unknownProjectNextStep
	}
	if errors.Is(err, tickets.ErrUnknownAssignee) {
		next = unknownAssigneeNextStep
	}
	res, out := errorResult(code, code.Message(err), operationID, err, next)
	var stale *tickets.VersionConflictError
	if errors.As(err, &stale) {
		t := contract.FromTicket(stale.Current)
		out.CurrentVersion, out.Ticket = stale.Current.Version, &t
	}
	var ask *approval.RequiredError
	if errors.As(err, &ask) {
		at := ask.Approval.ExpiresAt
		out.ApprovalURL, out.ApprovalID, out.ExpiresAt = ask.URL, ask.Approval.ID, &at
		// The URL itself in the text, which the next step refers to: a
		// model that reads only text must be able to hand it to the user.
		res.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Error %s: %s. approval_url: %s (expires_at %s). %s",
			code, out.Error.Message, ask.URL, at.UTC().Format(time.RFC3339), code.NextStep())}}
	}
	return res, outcome[T]{err: out}, nil
}

// badOperationIDNextStep replaces the invalid_input next step ("the same
// operation_id is fine") when the operation ID itself is what is wrong.
const badOperationIDNextStep = "Nothing was attempted; generate a fresh random UUID (version 4 or 7) as operation_id, call again, and reuse that operation_id unchanged on every retry."

// unknownProjectNextStep replaces the invalid_input next step when the
// project_id names no project of the tenant: the domain's message lists the
// known ones, and list_projects is how an agent finds them.
const unknownAssigneeNextStep = "Nothing was attempted; call list_users (query narrows it) for the people who can be assigned, then call again with one's id, \"me\" or \"\"; the same operation_id is fine."

const unknownProjectNextStep = "Nothing was attempted; call list_projects for your tenant's project_id values (for a tenant with none, its next_step says what an operator runs), then call again with one of them; the same operation_id is fine."

// errorResult builds an isError result: the structured error and one text
// block with the code, the message and the next step (code's own unless
// next is given), for clients that show only text.
func errorResult(code errcode.Code, msg, operationID string, cause error, next string) (*mcp.CallToolResult, *ErrorOut) {
	msg = strings.TrimRight(strings.TrimSpace(msg), ".")
	out := &ErrorOut{
		Error:       ErrorDetail{Code: string(code), Message: msg, Retryable: code.Retryable()},
		OperationID: operationID,
	}
	out.Status = string(errcode.Lookup(code).OperationStatus)
	if next == "" {
		next = code.NextStep()
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: fmt.Sprintf("Error %s: %s. %s", code, msg, next)},
	}}
	res.SetError(cause)
	return res, out
}
