// Package errcode is ticketd's one error table (docs/contract.md#error-codes):
// the stable, machine-readable codes of the public contract, one Row per
// code saying everything the transports (MCP, REST), the console, the
// metrics, the log, the schemas and the docs need about it, and Of, the one
// classifier from an error to its code. Every surface reads the table when
// it answers, so adding a code is adding its row, naming the errors that
// mean it (Row.Errors), plus a case in Of only when those errors must be
// told apart from another code's in order; then go test ./internal/errcode
// -update rewrites the tables in README.md and docs/contract.md. The walks
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
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
	"github.com/ticketd/ticketd/internal/webhooks/ssrf"
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
	// Meaning and Retry are the README's words for it.
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

// Table is every code, in the order the README and the schemas list them.
var Table = []Row{
	{
		Code: InvalidInput, Meaning: "validation failed; nothing attempted", Retry: "after fixing the input; the same ID is fine",
		MCP: MCPToolError, Status: http.StatusBadRequest, Title: "Invalid input", ShowCause: true,
		Public:       "the input is invalid",
		AgentStep:    "Nothing was attempted; fix the input the message names and call again (for a write, the same operation_id is fine).",
		OperatorStep: "The request is invalid; nothing was attempted. Fix it and send it again (the same Idempotency-Key is fine).",
		PersonStep:   "Nothing was changed. Correct what the message names and submit again; the form keeps its key, so it is still one change.",
		Outcome:      CountInvalid,
	},
	{
		Code: IdempotencyConflict, Meaning: "ID already used with different input", Retry: "no; a new ID only for a genuinely new ticket",
		MCP: MCPToolError, Status: http.StatusUnprocessableEntity, Title: "Idempotency key reused",
		Public:       "this operation ID was already used with different input",
		AgentStep:    "This operation_id was already used for a different ticket; nothing was written. Do not change the input to force it through: if this is genuinely a new ticket, generate a new operation_id.",
		OperatorStep: "This Idempotency-Key was already used with a different request; nothing was written. Use a new key only for a genuinely new ticket.",
		PersonStep:   "This form's key was already used for a different change, so nothing was written. The form now has a new key: submit it only if you mean a separate change.",
		Outcome:      CountConflict,
	},
	{
		Code: OperationInProgress, Meaning: "the same ID is running concurrently", Retry: "yes, same ID, after a short wait", Retryable: true,
		MCP: MCPToolError, OperationStatus: operations.StatusPending, Status: http.StatusConflict, Title: "Request in progress",
		Public:       "another call with this operation ID is still running",
		RetryAfter:   time.Second,
		AgentStep:    "Another call with this operation_id is still running; wait a moment and retry with the same operation_id and input.",
		OperatorStep: "A request with this Idempotency-Key is still running; retry the same request after Retry-After seconds.",
		PersonStep:   "The same submission is still being processed. Wait a moment and submit the form again as it is; it will not apply twice.",
		Outcome:      CountInProgress,
	},
	{
		Code: OutcomeUnknown, Meaning: "may or may not have committed", Retry: "check status, or retry with the same ID", Retryable: true,
		MCP: MCPToolError, OperationStatus: operations.StatusUnknown, Status: http.StatusServiceUnavailable, Title: "Outcome unknown",
		Public:       "the write's answer was lost (a database COMMIT, or a tracker that did not answer), so it may or may not have happened",
		RetryAfter:   2 * time.Second,
		AgentStep:    "The write may or may not have happened; call get_operation_status with this operation_id, or retry with the same operation_id and input (never a new one).",
		OperatorStep: "The write may or may not have happened. Check GET /api/v1/operations/{operation_id}, or retry the same request with the same Idempotency-Key (never a new one).",
		PersonStep:   "The change may or may not have been saved. Submit the form again exactly as it is: its key makes it apply at most once. The Operations page shows what became of it.",
		Outcome:      CountUnknown,
	},
	{
		Code: OperationFailed, Meaning: "the ID's operation was recorded as failed", Retry: "no; fix the cause, new ID",
		MCP: MCPToolError, Status: http.StatusUnprocessableEntity, Title: "Operation failed", ShowCause: true,
		Public:       "the operation with this ID failed earlier",
		AgentStep:    "This operation_id was used before and that operation failed for the reason given; nothing was created. Repeating it fails the same way: fix the cause and use a new operation_id.",
		OperatorStep: "This Idempotency-Key was used before and that request failed; nothing was created. Repeating it fails the same way: fix the cause and use a new key.",
		PersonStep:   "An earlier attempt with this key failed for the reason given, and repeating it fails the same way. Fix the cause and start from a fresh form.",
		Outcome:      CountFailed,
	},
	{
		Code: OperationExpired, Meaning: "the ID was applied once, longer ago than operations are remembered", Retry: "no; look up what it made",
		MCP: MCPToolError, Status: http.StatusConflict, Title: "Operation expired", ShowCause: true,
		Public:       "this operation ID was already applied, longer ago than ticketd remembers operations; nothing was written now",
		AgentStep:    "This operation_id was already applied once, so long ago that its record is gone and its result cannot be replayed; nothing was written now. Do not retry it, and do not switch to a new operation_id to force it through: find what it made (list_tickets, get_ticket) and decide from there.",
		OperatorStep: "This Idempotency-Key was already applied once, so long ago that its record is gone and its result cannot be replayed; nothing was written now. Find what it made (GET /api/v1/tickets) before sending anything under a new key.",
		PersonStep:   "This form was already submitted once, so long ago that ticketd no longer remembers its result; nothing was written now. Look for what it made before filling in a fresh form.",
		Outcome:      CountConflict,
	},
	{
		Code: NotFound, Meaning: "no such ticket, project or operation (or another tenant's)", Retry: "no",
		MCP: MCPToolError, Status: http.StatusNotFound, Title: "Not found", ShowCause: true,
		Public:       "nothing with that identifier exists for your tenant",
		AgentStep:    "Nothing with that identifier exists for your tenant; check the identifier (list_tickets or list_projects can help).",
		OperatorStep: "Nothing with that identifier exists for your tenant; check it (GET /api/v1/tickets or /api/v1/projects can help).",
		PersonStep:   "Nothing with that identifier exists in your tenant. Check it, or find it from the Tickets page.",
		Outcome:      CountInvalid,
	},
	{
		Code: AlreadyExists, Meaning: "a project with that ID or key exists", Retry: "no",
		MCP: MCPNone, Status: http.StatusConflict, Title: "Already exists", ShowCause: true,
		Public:       "something with that identifier already exists",
		AgentStep:    "Something with that identifier already exists; use it, or pick another identifier.",
		OperatorStep: "Something with that identifier already exists; use it, or pick another identifier.",
		PersonStep:   "Something with that identifier already exists. Use it, or choose another identifier.",
		Outcome:      CountInvalid,
	},
	{
		Code: VersionConflict, Meaning: "the ticket changed since the version the caller read", Retry: "no; re-read the ticket and decide again",
		MCP: MCPToolError, Status: http.StatusConflict, StatusNote: "(412 with `If-Match`)", Title: "Version conflict", ShowCause: true,
		Public:       "the ticket was changed by someone else since the version given",
		AgentStep:    "The ticket changed since you read it; nothing was written or recorded. This result carries current_version and the current ticket: decide again whether the change is still right and, if so, call again with if_version set to current_version (the same operation_id is fine).",
		OperatorStep: "The ticket changed since the version you sent; nothing was written or recorded. The ETag header names the current version: GET the ticket, decide again, and send that version in If-Match (the same Idempotency-Key is fine).",
		PersonStep:   "The ticket changed since the form was shown, so nothing was written. The form now shows the current values: check them and make your change again.",
		Outcome:      CountInvalid,
	},
	{
		Code: StateConflict, Meaning: "the request does not fit the resource's state (a webhook delivery still pending, a disabled webhook)", Retry: "no; once the state changes",
		MCP: MCPNone, Status: http.StatusConflict, Title: "State conflict", ShowCause: true,
		Public:       "the request does not fit the current state of what it names",
		AgentStep:    "The request does not fit the current state of what it names; read it again and decide.",
		OperatorStep: "The request does not fit the current state of what it names (the message says which); GET it again and decide.",
		PersonStep:   "This does not fit the current state (the message says why), so nothing was changed. Reload the page and decide again.",
		Outcome:      CountFailed,
	},
	{
		Code: ApprovalRequired, Meaning: "the write needs a person's yes first (urgent, or a large bulk); nothing written", Retry: "yes, same ID, once a person approved at `approval_url`", Retryable: true,
		MCP: MCPToolError, Status: http.StatusPreconditionRequired, Title: "Approval required", ShowCause: true,
		Public: "this write needs a person's approval first; nothing was written",
		// A person takes seconds at least; polling faster only adds load.
		RetryAfter:   5 * time.Second,
		AgentStep:    "Nothing was written. Ask the user to open approval_url and approve this change, then retry with the same operation_id and arguments (before expires_at).",
		OperatorStep: "Nothing was written. Open approval_url (signed in to the console as the same user) and approve, then send the same request again with the same Idempotency-Key before expires_at.",
		PersonStep:   "This change needs a person's approval first; nothing was written. Open the Approvals page, approve it, then submit the form again as it is.",
		// Waiting for a person: nothing ran; ticketd_approvals_total counts it.
		Outcome: NotCounted,
	},
	{
		Code: ApprovalDeclined, Meaning: "the person asked said no; nothing written or recorded", Retry: "no; only if the person changes their mind (then it asks again)",
		MCP: MCPToolError, Status: http.StatusForbidden, Title: "Approval declined", ShowCause: true,
		Public:       "the person asked to approve this write declined it; nothing was written",
		AgentStep:    "The person declined this change; nothing was written. Do not retry it unless the user asks for it again (the same operation_id then asks again).",
		OperatorStep: "The approval was declined; nothing was written. Send the request again only if it should be asked again (the same Idempotency-Key is fine).",
		PersonStep:   "The approval was declined, so nothing was written. Submit the form again only if it should be asked again.",
		// Refused by a person: nothing ran; ticketd_approvals_total counts it.
		Outcome: NotCounted,
	},
	{
		Code: Forbidden, Meaning: "the token lacks the scope", Retry: "no",
		MCP: MCPToolError, Status: http.StatusForbidden, Title: "Forbidden", ShowCause: true,
		Public:       "your token lacks the scope this action needs",
		AgentStep:    "Your token lacks the scope for this action; ask for a token with the scope named in the message.",
		OperatorStep: "Your token lacks the scope this request needs; use a token that grants the scope named here.",
		PersonStep:   "Your token lacks the scope for this. Sign out and sign in with a token that has it.",
		Outcome:      NotCounted,
	},
	{
		Code: Unauthenticated, Meaning: "missing or invalid token", Retry: "no",
		MCP: MCPHTTP401, Status: http.StatusUnauthorized, StatusNote: "+ `WWW-Authenticate`", Title: "Unauthenticated", ShowCause: true,
		Public:       "a valid bearer token is required",
		AgentStep:    "Provide a valid bearer token.",
		OperatorStep: "Send a valid bearer token: Authorization: Bearer <token>.",
		PersonStep:   "Sign in with a valid bearer token (for example one from ticketd token).",
		Outcome:      NotCounted,
	},
	{
		Code: RateLimited, Meaning: "the tenant is over its share of the server", Retry: "yes, same ID, after the wait it names", Retryable: true,
		MCP: MCPToolError, Status: http.StatusTooManyRequests, Title: "Too many requests",
		Public:       "your tenant has too many requests in flight",
		RetryAfter:   time.Second,
		AgentStep:    "Your tenant has too many calls in flight; nothing was attempted. Wait the time given, then retry with the same operation_id and input.",
		OperatorStep: "Your tenant has too many requests in flight; nothing was attempted. Retry the same request after Retry-After seconds.",
		PersonStep:   "Your tenant is sending more than its share right now, so nothing was attempted. Wait a moment and submit the form again as it is; it will not apply twice.",
		Outcome:      NotCounted,
	},
	{
		Code: Unavailable, Meaning: "the store failed before anything committed", Retry: "yes, same ID", Retryable: true,
		MCP: MCPToolError, Status: http.StatusServiceUnavailable, Title: "Service unavailable",
		Public:       "the ticket store could not be reached; nothing was written",
		RetryAfter:   5 * time.Second,
		AgentStep:    "The ticket store is unavailable and nothing was written; retry shortly with the same operation_id and input.",
		OperatorStep: "The ticket store is unavailable and nothing was written; retry the same request shortly.",
		PersonStep:   "The ticket store is unavailable and nothing was written. Submit the form again in a moment; it will not apply twice.",
		Outcome:      CountFailed,
	},
	{
		Code: Internal, Meaning: "a bug; logged with a request ID", Retry: "maybe", Retryable: true,
		MCP: MCPToolError, Status: http.StatusInternalServerError, Title: "Internal error",
		Public:       "internal error",
		AgentStep:    "An internal error occurred; retry with the same operation_id and input, and report it if it persists.",
		OperatorStep: "An internal error occurred; retry the same request, and report the request_id if it persists.",
		PersonStep:   "Something went wrong on the server and was logged. Submit the form again (it will not apply twice), and report it if it persists.",
		Outcome:      CountFailed,
	},
}

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
