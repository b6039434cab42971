package errcode_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

func TestOf(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error { return fmt.Errorf("create ticket: %w", err) }
	cases := []struct {
		err  error
		want errcode.Code
	}{
		{nil, ""},
		{wrap(operations.ErrOutcomeUnknown), errcode.OutcomeUnknown},
		// A lost COMMIT on a dead connection is unknown, not unavailable.
		{fmt.Errorf("%w: %w", operations.ErrOutcomeUnknown, operations.ErrUnavailable), errcode.OutcomeUnknown},
		{wrap(operations.ErrConflict), errcode.IdempotencyConflict},
		{wrap(operations.ErrInProgress), errcode.OperationInProgress},
		{wrap(operations.ErrFailed), errcode.OperationFailed},
		{wrap(&tickets.ValidationError{Fields: []tickets.FieldError{{Field: "title", Message: "required"}}}), errcode.InvalidInput},
		{wrap(tickets.ErrNotFound), errcode.NotFound},
		{wrap(operations.ErrNotFound), errcode.NotFound},
		{wrap(tickets.ErrExists), errcode.AlreadyExists},
		{wrap(&tickets.VersionConflictError{Expected: 1}), errcode.VersionConflict},
		{wrap(tickets.ErrUnavailable), errcode.Unavailable},
		{wrap(errcode.ErrForbidden), errcode.Forbidden},
		{wrap(authn.ErrInvalidToken), errcode.Unauthenticated},
		{wrap(operations.ErrUnavailable), errcode.Unavailable},
		{wrap(context.DeadlineExceeded), errcode.Unavailable},
		{errors.New("surprise"), errcode.Internal},
	}
	for _, c := range cases {
		if got := errcode.Of(c.err); got != c.want {
			t.Errorf("Of(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestRetryableAndNextStep(t *testing.T) {
	t.Parallel()
	retryable := map[errcode.Code]bool{
		errcode.InvalidInput: false, errcode.IdempotencyConflict: false, errcode.OperationInProgress: true,
		errcode.OutcomeUnknown: true, errcode.OperationFailed: false, errcode.NotFound: false, errcode.AlreadyExists: false, errcode.VersionConflict: false, errcode.Forbidden: false,
		errcode.Unauthenticated: false, errcode.Unavailable: true, errcode.Internal: true,
	}
	steps := map[string]errcode.Code{}
	for code, want := range retryable {
		if got := code.Retryable(); got != want {
			t.Errorf("%s.Retryable() = %v, want %v", code, got, want)
		}
		step := code.NextStep()
		if other, dup := steps[step]; dup {
			t.Errorf("%s and %s share the next step %q", code, other, step)
		}
		steps[step] = code
	}
}
