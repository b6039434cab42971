package console

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// pendingApproval is what a form that waits for a person's yes shows above
// itself: what will change, a link to the approval's page and, when the
// signed-in person may decide it, a button that approves and submits the
// same form in one step. The form keeps its operation ID, so the write
// that follows consumes this approval and no second one is asked for.
type pendingApproval struct {
	Approval approval.Approval
	// Form is the id of the form the approve button submits.
	Form string
	// Verb names the form's write on the button ("create the ticket").
	Verb string
	// CanDecide: the person holds tickets:approve and, under four-eyes
	// approval, did not ask for it.
	CanDecide bool
}

// URL is the approval's console page.
func (p pendingApproval) URL() string { return approvalsNav.Path + "/" + p.Approval.ID }

// pendingFrom is the panel for err when the write needs approval, else nil.
func (c *console) pendingFrom(err error, req *request, form, verb string) *pendingApproval {
	var re *approval.RequiredError
	if c.gate == nil || !errors.As(err, &re) {
		return nil
	}
	return &pendingApproval{Approval: re.Approval, Form: form, Verb: verb,
		CanDecide: req.principal.HasScope(authn.ScopeApprove) && !c.gate.SelfApproval(re.Approval, req.principal.Subject)}
}

// approveSubmitted approves the approval a form's approve button names,
// before the form's write runs: the button sits on a form shown with its
// pending approval, so deciding and writing are one click. It refuses an
// approval of another operation (a tampered form) and a person without
// tickets:approve; an approval already approved is left as it is, so a
// resubmitted form writes without deciding twice.
func (c *console) approveSubmitted(r *http.Request, req *request, opID operations.ID) error {
	id := r.PostForm.Get("approve")
	if id == "" || c.gate == nil {
		return nil
	}
	if !req.principal.HasScope(authn.ScopeApprove) {
		return fmt.Errorf("%w: approving needs the %s scope, which your token does not grant", authn.ErrForbidden, authn.ScopeApprove)
	}
	a, err := c.gate.Get(r.Context(), req.principal.Tenant, id)
	if err != nil {
		return err
	}
	if a.OperationID != opID.UUID() {
		return &tickets.ValidationError{Fields: []tickets.FieldError{{Field: "approve", Message: "names approval " + a.ID + ", which is for another operation than this form's"}}}
	}
	if a.Status != approval.StatusPending {
		return nil
	}
	_, err = c.gate.Decide(r.Context(), req.principal.Tenant, req.principal.Subject, id, true, approval.ViaConsole)
	return err
}
