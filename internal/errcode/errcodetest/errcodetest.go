// Package errcodetest gives the error codes example errors, as the packages
// that detect them return them, so that a test can walk errcode.Table across
// every surface (MCP, REST, console, metrics, OpenAPI, the docs' tables).
//
// Importing it adds MadeUp to errcode.Table for the whole test binary, before
// any test runs: a code no surface has ever heard of, whose row is the only
// edit. Every walk then proves that a new code reaches every surface from
// its row alone. A code added for real needs no example here either: Walk
// uses its row's first error.
package errcodetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// DriverText is what a database driver says about a connection it lost: the
// user, database, host and port. No surface may ever show it.
const DriverText = "failed to connect to `user=ticketd_owner database=ticketd_prod`: 10.0.0.7:5432 (db.internal): dial error: connection refused"

// ErrMadeUp is the error that means MadeUp's code.
var ErrMadeUp = errors.New("the made-up thing happened")

// MadeUp is the row of a code that does not exist, added to errcode.Table
// by this package's init: what adding a code looks like, the one edit.
var MadeUp = errcode.Row{
	Code: "made_up_code", Meaning: "a code only the tests know", Retry: "no",
	MCP: errcode.MCPToolError, Status: 418, Title: "Made up", ShowCause: true,
	Public:       "the made-up thing happened",
	AgentStep:    "Made up for the tests: nothing to do.",
	OperatorStep: "Made up for the tests: nothing to send.",
	PersonStep:   "Made up for the tests: nothing to submit.",
	Outcome:      errcode.CountFailed,
	Errors:       []error{ErrMadeUp},
}

func init() { errcode.Table = append(errcode.Table, MadeUp) }

// IsMadeUp reports whether r is MadeUp's row, which the documents that
// list the real codes (docs/agents.md, docs/contract.md) leave out.
func IsMadeUp(r errcode.Row) bool { return r.Code == MadeUp.Code }

// Example is an error that errcode.Of classifies as Code.
type Example struct {
	Code errcode.Code
	Err  error
}

func wrap(err error) error { return fmt.Errorf("create ticket: %w", err) }

// Examples lists errors of every code a service can return, each wrapped as
// its caller wraps it; the first of each code is the one Walk uses. A code
// only the edge answers (rate_limited) has none.
var Examples = []Example{
	{errcode.InvalidInput, wrap(&tickets.ValidationError{Fields: []tickets.FieldError{{Field: "title", Message: "is required"}}})},
	{errcode.InvalidInput, wrap(webhooks.ErrInvalid)},
	{errcode.InvalidInput, wrap(fmt.Errorf("%w: 10.0.0.1 is private", ssrf.ErrRefused))},
	{errcode.IdempotencyConflict, wrap(operations.ErrConflict)},
	{errcode.OperationInProgress, wrap(operations.ErrInProgress)},
	{errcode.OutcomeUnknown, wrap(fmt.Errorf("%w (key acme/create_ticket/…): %s", operations.ErrOutcomeUnknown, DriverText))},
	// A lost COMMIT on a dead connection is unknown, not unavailable.
	{errcode.OutcomeUnknown, fmt.Errorf("%w: %w", operations.ErrOutcomeUnknown, operations.ErrUnavailable)},
	{errcode.OperationFailed, wrap(fmt.Errorf("%w (key acme/create_ticket/…): the project was archived", operations.ErrFailed))},
	{errcode.OperationExpired, wrap(fmt.Errorf("%w: a comment was already added with this operation_id", operations.ErrExpired))},
	{errcode.NotFound, wrap(tickets.ErrNotFound)},
	{errcode.NotFound, wrap(operations.ErrNotFound)},
	{errcode.NotFound, wrap(webhooks.ErrNotFound)},
	{errcode.AlreadyExists, wrap(tickets.ErrExists)},
	{errcode.VersionConflict, wrap(&tickets.VersionConflictError{Expected: 1, Current: tickets.Ticket{Key: "SUP-1", Version: 2}})},
	{errcode.StateConflict, wrap(webhooks.ErrConflict)},
	{errcode.ApprovalRequired, wrap(&approval.RequiredError{
		Approval: approval.Approval{ID: "0b7c2f0e-8d51-4c3a-9f1e-2a6b5c4d3e21", Proposal: approval.Proposal{
			Summary: "Create an urgent ticket \"Checkout is down\" in project support (operation …)."},
			ExpiresAt: time.Date(2026, 7, 28, 12, 5, 0, 0, time.UTC)},
		Mode: approval.ModeNone, URL: "https://tickets.example/console/approvals/0b7c2f0e-8d51-4c3a-9f1e-2a6b5c4d3e21",
	})},
	{errcode.ApprovalDeclined, wrap(fmt.Errorf("%w by alice (approval …)", approval.ErrDeclined))},
	{errcode.InvalidInput, wrap(approval.ErrBadState)},
	{errcode.NotFound, wrap(approval.ErrNotFound)},
	{errcode.StateConflict, wrap(approval.ErrDecided)},
	{errcode.Forbidden, wrap(approval.ErrSelfApproval)},
	{errcode.Unavailable, wrap(approval.ErrUnavailable)},
	{errcode.Forbidden, wrap(authn.ErrForbidden)},
	{errcode.Unauthenticated, wrap(authn.ErrInvalidToken)},
	{errcode.Unauthenticated, wrap(authn.ErrUnauthenticated)},
	{errcode.Unavailable, wrap(fmt.Errorf("%w: read ticket: %s", tickets.ErrUnavailable, DriverText))},
	{errcode.Unavailable, wrap(operations.ErrUnavailable)},
	{errcode.Unavailable, wrap(context.DeadlineExceeded)},
	{errcode.Internal, fmt.Errorf("decode labels: %s", DriverText)},
	{errcode.Internal, errors.New("surprise")},
}

// EdgeOnly lists the codes no service returns: the edge answers them itself
// (internal/server/limit.go, internal/mcpedge/limit.go), so they have no
// example error.
var EdgeOnly = []errcode.Code{errcode.RateLimited}

// Walk runs f once for every row of errcode.Table, MadeUp's included, as a
// subtest named after the code, with the row's first example (nil for a
// code only the edge answers). A code that has neither an example (in
// Examples, or its row's first error) nor is answered by the edge alone
// fails the walk: its surfaces would go untested.
func Walk(t *testing.T, f func(t *testing.T, row errcode.Row, err error)) {
	t.Helper()
	for _, row := range errcode.Table {
		err := example(row)
		if err == nil && !slices.Contains(EdgeOnly, row.Code) {
			t.Errorf("%s has no example: give its row an error (errcode.Row.Errors)", row.Code)
			continue
		}
		t.Run(string(row.Code), func(t *testing.T) { f(t, row, err) })
	}
}

func example(row errcode.Row) error {
	for _, e := range Examples {
		if e.Code == row.Code {
			return e.Err
		}
	}
	if len(row.Errors) > 0 {
		return wrap(row.Errors[0])
	}
	return nil
}
