// Package errcode is the one classifier from ticketd's errors to the stable,
// machine-readable codes of the public contract (DESIGN §3). Each transport
// keeps one short table from Code to its own form (an MCP tool error, an HTTP
// status); none inspects errors itself.
package errcode

import (
	"context"
	"errors"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
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
	NotFound            Code = "not_found"
	AlreadyExists       Code = "already_exists"
	VersionConflict     Code = "version_conflict"
	Forbidden           Code = "forbidden"
	Unauthenticated     Code = "unauthenticated"
	Unavailable         Code = "unavailable"
	Internal            Code = "internal"
)

// Errors that transports raise themselves, before the service runs.
var (
	// ErrForbidden: the caller's token lacks the scope the action needs.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated: no valid token.
	ErrUnauthenticated = errors.New("unauthenticated")
)

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
	case errors.Is(err, operations.ErrFailed):
		return OperationFailed
	case errors.Is(err, tickets.ErrInvalid):
		return InvalidInput
	case errors.Is(err, tickets.ErrNotFound), errors.Is(err, operations.ErrNotFound):
		return NotFound
	case errors.Is(err, tickets.ErrExists):
		return AlreadyExists
	case errors.Is(err, tickets.ErrVersionConflict):
		return VersionConflict
	case errors.Is(err, ErrForbidden):
		return Forbidden
	case errors.Is(err, ErrUnauthenticated), errors.Is(err, authn.ErrInvalidToken):
		return Unauthenticated
	case errors.Is(err, operations.ErrUnavailable), errors.Is(err, tickets.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return Unavailable
	}
	return Internal
}

// Retryable reports whether repeating the same call (same operation ID,
// same input) can succeed without the caller changing anything.
func (c Code) Retryable() bool {
	switch c {
	case OperationInProgress, OutcomeUnknown, Unavailable, Internal:
		return true
	}
	return false
}

// NextStep is one sentence telling an agent what to do about an error with
// this code. Transports append it to the error's message.
func (c Code) NextStep() string {
	switch c {
	case InvalidInput:
		return "Nothing was attempted; fix the input the message names and call again (for a write, the same operation_id is fine)."
	case IdempotencyConflict:
		return "This operation_id was already used for a different ticket; nothing was written. Do not change the input to force it through: if this is genuinely a new ticket, generate a new operation_id."
	case OperationInProgress:
		return "Another call with this operation_id is still running; wait a moment and retry with the same operation_id and input."
	case OperationFailed:
		return "This operation_id was used before and that operation failed for the reason given; nothing was created. Repeating it fails the same way: fix the cause and use a new operation_id."
	case OutcomeUnknown:
		return "The ticket may or may not have been created; call get_operation_status with this operation_id, or retry with the same operation_id and input (never a new one)."
	case NotFound:
		return "Nothing with that identifier exists for your tenant; check the identifier (list_tickets or list_projects can help)."
	case AlreadyExists:
		return "Something with that identifier already exists; use it, or pick another identifier."
	case VersionConflict:
		return "The ticket changed since you read it and nothing was written; re-read it (the current version and ticket are in the error), decide again, and send the update with the new version (the same operation_id is fine)."
	case Forbidden:
		return "Your token lacks the scope for this action; ask for a token with the scope named in the message."
	case Unauthenticated:
		return "Provide a valid bearer token."
	case Unavailable:
		return "The ticket store is unavailable and nothing was written; retry shortly with the same operation_id and input."
	default:
		return "An internal error occurred; retry with the same operation_id and input, and report it if it persists."
	}
}
