package tickets

import (
	"context"
	"errors"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
)

// People is the tenant directory the service checks assignees against, for
// the transports that manage it.
func (s *Service) People() *people.Directory { return s.people }

// ErrUnknownAssignee marks the invalid input of an assignee who is not an
// active user of the tenant, so that a transport can say how its callers
// list the users (MCP: list_users). The error is also a *ValidationError.
var ErrUnknownAssignee = errors.New("unknown assignee")

type unknownAssigneeError struct{ *ValidationError }

func (e unknownAssigneeError) Is(target error) bool { return target == ErrUnknownAssignee }
func (e unknownAssigneeError) Unwrap() error        { return e.ValidationError }

// checkAssignee enrolls the caller (so "me" is always a user) and refuses
// an assignee who is not an active user of the tenant; "" unassigns and
// nil leaves the assignee alone. A write whose key the ledger already holds
// is let through: its replay answers what it did, whoever has left since.
func (s *Service) checkAssignee(ctx context.Context, c Caller, key operations.Key, assignee *string) error {
	if err := s.enroll(ctx, c); err != nil {
		return err
	}
	if assignee == nil || *assignee == "" || *assignee == c.Subject {
		return nil
	}
	if ok, err := s.people.Assignable(ctx, c.Tenant, *assignee); ok || err != nil {
		return err
	}
	if _, err := s.ledger.Lookup(ctx, key); err == nil {
		return nil
	}
	return unknownAssigneeError{invalidField("assignee", "%q is not an active user of this tenant; assign one of its users, \"me\" (yourself) or \"\" (nobody)", *assignee)}
}

// enroll adds the caller to its tenant's directory on its first write.
func (s *Service) enroll(ctx context.Context, c Caller) error {
	return s.people.Enroll(ctx, c.Tenant, c.Subject)
}
