package tickets

import (
	"context"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
)

// People is the tenant directory the service checks assignees against, for
// the transports that manage it.
func (s *Service) People() *people.Directory { return s.people }

// ErrUnknownAssignee is people.ErrUnknownAssignee, which the writes return.
var ErrUnknownAssignee = people.ErrUnknownAssignee

// checkAssignee is people.Directory.CheckAssignee for the write under key.
func (s *Service) checkAssignee(ctx context.Context, c Caller, key operations.Key, assignee *string) error {
	return s.people.CheckAssignee(ctx, c.Tenant, c.Subject, assignee, func() bool {
		_, err := s.ledger.Lookup(ctx, key)
		return err == nil
	})
}

// enroll adds the caller to its tenant's directory on its first write.
func (s *Service) enroll(ctx context.Context, c Caller) error {
	return s.people.Enroll(ctx, c.Tenant, c.Subject)
}
