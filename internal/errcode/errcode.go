// Package errcode is ticketd's one error table (docs/contract.md#error-codes):
// the stable, machine-readable codes of the public contract, one Row per
// code saying everything the transports (MCP, REST), the console, the
// metrics, the log, the schemas and the docs need about it, and Of, the one
// classifier from an error to its code. Every surface reads the table when
// it answers, so adding a code is adding its row, naming the errors that
// mean it (Row.Errors), plus a case in Of only when those errors must be
// told apart from another code's in order; then go test ./internal/errcode
// -update rewrites the tables in docs/agents.md and docs/contract.md. The walks
// of internal/errcode/errcodetest, which add a made-up row to every test
// binary, prove that no surface needs an edit.
package errcode

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// Code is a contract error code.
type Code string

// The codes. Their spelling is the public contract.
const (
	InvalidInput        Code = "invalid_input"
	IdempotencyConflict Code = "idempotency_conflict"
	OperationInProgress Code = "operation_in_progress"
	OutcomeUnknown      Code = "outcome_unknown"
	OperationFailed     Code = "operation_failed"
	OperationExpired    Code = "operation_expired"
	NotFound            Code = "not_found"
	AlreadyExists       Code = "already_exists"
	VersionConflict     Code = "version_conflict"
	StateConflict       Code = "state_conflict"
	ApprovalRequired    Code = "approval_required"
	ApprovalDeclined    Code = "approval_declined"
	Forbidden           Code = "forbidden"
	Unauthenticated     Code = "unauthenticated"
	RateLimited         Code = "rate_limited"
	Unavailable         Code = "unavailable"
	Internal            Code = "internal"
)

// How a code reaches an MCP client.
const (
	// MCPToolError: a tool result with isError and the structured error.
	MCPToolError = "isError"
	// MCPHTTP401: refused by the HTTP layer before any tool runs.
	MCPHTTP401 = "HTTP 401"
	// MCPNone: no tool can meet it.
	MCPNone = "—"
)

// Row is everything the contract says about one code.
type Row struct {
	Code Code
	// Meaning and Retry are docs/agents.md's words for it.
	Meaning, Retry string
	// Retryable: repeating the same call (same operation ID, same input)
	// can succeed without the caller changing anything.
	Retryable bool
	// MCP is how the code reaches an MCP client (MCPToolError, …).
	MCP string
	// OperationStatus is the status an MCP tool error reports alongside the
	// code, when the operation has one.
	OperationStatus operations.Status
	// Status is the HTTP status; StatusNote qualifies it ("412 with
	// If-Match") when a request can make it another.
	Status     int
	StatusNote string
	// Title is the problem document's title.
	Title string
	// ShowCause is the one policy, for both transports, on what a caller
	// may see: the error's own text when true (it names the caller's
	// mistake and carries no internals), else only Public. Server-side
	// failures (Status 5xx) never show it; both transports log those at
	// error level with the cause (ServerFault).
	ShowCause bool
	// Public is the safe message shown when the cause is not, in words
	// that suit both transports.
	Public string
	// RetryAfter is the REST Retry-After; 0 sends none.
	RetryAfter time.Duration
	// AgentStep tells an agent (MCP) what to do next, in tool terms.
	AgentStep string
	// OperatorStep tells an operator (REST) what to do next, in HTTP terms.
	OperatorStep string
	// PersonStep tells a person at the console what to do next, in the
	// words of its pages and forms.
	PersonStep string
	// Outcome is how ticketd_operations_total counts a write that ended
	// with this code.
	Outcome Outcome
	// Errors are the errors that mean this code (errors.Is), for Of, which
	// checks them after its own cases: a code needs a case in Of instead
	// only when its errors can come wrapped with another code's and must
	// win (a lost COMMIT over a failure).
	Errors []error
}

// Outcome is the outcome label of ticketd_operations_total for a write that
// ended with a code (docs/contract.md#metrics). A success is created or
// replayed, which no code carries.
type Outcome string

// The outcomes a code can count as.
const (
	CountConflict   Outcome = "conflict"
	CountInProgress Outcome = "in_progress"
	// CountUnknown is never merged with anything else: each one needs an
	// operator.
	CountUnknown Outcome = "unknown"
	// CountInvalid: rejected on its input, nothing written.
	CountInvalid Outcome = "invalid"
	// CountFailed: the write did not happen for another reason.
	CountFailed Outcome = "failed"
	// NotCounted marks a refusal before the ledger (the token, its scope,
	// the tenant's limits): such a call is a request, never an operation,
	// and ticketd_requests_total counts it.
	NotCounted Outcome = "-"
)

// Lookup returns c's row; an unknown code gets Internal's, because a code
// with no row is a bug, never a reason to guess. It reads Table as it is,
// a few rows, so a row is found the moment it is in the table.
func Lookup(c Code) *Row {
	internal := &Table[0]
	for i := range Table {
		switch Table[i].Code {
		case c:
			return &Table[i]
		case Internal:
			internal = &Table[i]
		}
	}
	return internal
}

// Codes lists every code in table order, for schema enums.
func Codes() []string {
	out := make([]string, len(Table))
	for i, r := range Table {
		out[i] = string(r.Code)
	}
	return out
}

// Of classifies err. Anything unrecognised is Internal: a bug, never a
// reason to guess. A lost COMMIT reply is checked first: it must never be
// mistaken for a failure.
func Of(err error) Code {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, operations.ErrOutcomeUnknown):
		return OutcomeUnknown
	case errors.Is(err, operations.ErrConflict):
		return IdempotencyConflict
	case errors.Is(err, operations.ErrInProgress):
		return OperationInProgress
	case errors.Is(err, approval.ErrRequired):
		return ApprovalRequired
	case errors.Is(err, approval.ErrDeclined):
		return ApprovalDeclined
	case errors.Is(err, approval.ErrBadState):
		return InvalidInput
	case errors.Is(err, approval.ErrNotFound):
		return NotFound
	case errors.Is(err, approval.ErrDecided):
		return StateConflict
	case errors.Is(err, approval.ErrSelfApproval):
		return Forbidden
	case errors.Is(err, approval.ErrUnavailable):
		return Unavailable
	case errors.Is(err, operations.ErrFailed):
		return OperationFailed
	case errors.Is(err, operations.ErrExpired):
		return OperationExpired
	case errors.Is(err, tickets.ErrInvalid), errors.Is(err, webhooks.ErrInvalid), errors.Is(err, ssrf.ErrRefused):
		return InvalidInput
	case errors.Is(err, tickets.ErrNotFound), errors.Is(err, operations.ErrNotFound), errors.Is(err, webhooks.ErrNotFound):
		return NotFound
	case errors.Is(err, webhooks.ErrConflict), errors.Is(err, tickets.ErrSettled):
		return StateConflict
	case errors.Is(err, tickets.ErrExists):
		return AlreadyExists
	case errors.Is(err, tickets.ErrVersionConflict):
		return VersionConflict
	case errors.Is(err, authn.ErrForbidden):
		return Forbidden
	case errors.Is(err, authn.ErrUnauthenticated), errors.Is(err, authn.ErrInvalidToken):
		return Unauthenticated
	case errors.Is(err, operations.ErrUnavailable), errors.Is(err, tickets.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Unavailable
	}
	for _, r := range Table {
		for _, e := range r.Errors {
			if errors.Is(err, e) {
				return r.Code
			}
		}
	}
	return Internal
}

// Retryable reports whether repeating the same call (same operation ID,
// same input) can succeed without the caller changing anything.
func (c Code) Retryable() bool { return Lookup(c).Retryable }

// NextStep is one sentence telling an agent what to do about an error with
// this code. MCP appends it to the error's message.
func (c Code) NextStep() string { return Lookup(c).AgentStep }

// ServerFault reports whether c is the server's failure rather than the
// caller's: such errors are logged at error level with their cause, which
// the caller never sees.
func (c Code) ServerFault() bool { return Lookup(c).Status >= http.StatusInternalServerError }

// Message is what a caller may read about err, classified as c: err's own
// text (for a validation error, only its field list, without the wrapping
// that says where it was detected) when c's row shows causes, else the row's
// safe public message.
func (c Code) Message(err error) string {
	row := Lookup(c)
	if !row.ShowCause || err == nil {
		return row.Public
	}
	var invalid *tickets.ValidationError
	if errors.As(err, &invalid) {
		return invalid.Error()
	}
	return err.Error()
}
