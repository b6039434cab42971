package tracked

import (
	"context"
	"errors"
	"fmt"

	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
)

// accountOf is the tracker account an update assigns t to, for a backend
// whose issues hold an assignee (tracker.Backend.HoldsPriorityAndAssignee);
// "" when the update assigns no one new. It is found before the edit is
// claimed, so a refusal records nothing and sends nothing: the tracker is
// asked (Jira's user search, a read) for the one active account with the
// assignee's email in the tenant's directory, the only name ticketd and
// the tracker share.
//
// Errors: *tickets.ValidationError on assignee (not a user, no email, no
// one account); tickets.ErrUnavailable (the directory or the tracker could
// not be asked: nothing was recorded, a retry may succeed).
func (e *Engine) accountOf(ctx context.Context, b tracker.Backend, tenant string, t tickets.Ticket, assignee *string) (string, error) {
	if !b.HoldsPriorityAndAssignee() || assignee == nil || *assignee == "" || *assignee == t.Assignee {
		return "", nil
	}
	who := *assignee
	u, err := e.m.People().Get(ctx, tenant, who)
	switch {
	case errors.Is(err, tickets.ErrNotFound):
		return "", invalidField("assignee", "%q is not a user of this tenant; nothing was sent", who)
	case err != nil:
		return "", err
	case u.Email == "":
		return "", invalidField("assignee", "%q has no email in this tenant's directory, and ticketd finds an assignee's %s account by email: "+
			"give the user one (PATCH /api/v1/users/%s) or assign someone else; nothing was sent", who, b.Kind, who)
	}
	tr, err := e.openTracker(tenant, b)
	if err != nil {
		return "", fmt.Errorf("%w: find %q's account in %s: %v; nothing was recorded", tickets.ErrUnavailable, who, b.Where(), err)
	}
	account, err := tr.Account(ctx, u.Email)
	switch {
	case errors.Is(err, tracker.ErrInvalid):
		return "", invalidField("assignee", "%q (%s) is no one active account of the %s site %s: its user search finds none, or more than one, "+
			"and ticketd does not guess whom to assign; nothing was sent", who, u.Email, b.Kind, b.Site)
	case err != nil:
		return "", fmt.Errorf("%w: find %q's account in %s: %v; nothing was recorded: retry", tickets.ErrUnavailable, who, b.Where(), err)
	}
	return account, nil
}
