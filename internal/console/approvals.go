package console

import (
	"net/http"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
)

// approvalsNav is the pending-approvals entry, shown when the service gates
// writes behind approvals.
var approvalsNav = nav{"/console/approvals", "Approvals"}

// approver guards the approval pages: deciding is a person's, so they need
// tickets:approve, which agents' tokens never carry (docs/approval.md). A
// signed-in subject of the tenant without it is refused with 403; another
// tenant's approval is 404 whoever asks.
func (c *console) approver(h handlerFunc) http.Handler {
	return c.session(c.require(authn.ScopeApprove, h))
}

// approvalsPage lists the tenant's pending approvals, whoever asked for
// them: any holder of tickets:approve in the tenant may decide them.
func (c *console) approvalsPage(w http.ResponseWriter, r *http.Request, req *request) {
	list, err := c.gate.ListPending(r.Context(), req.principal.Tenant, pageSize)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	c.render(w, r, req, http.StatusOK, "approvals", layout{Title: "Approvals", Nav: approvalsNav.Path}, list)
}

// approvalView is the approval page: the approval, and whether the signed-in
// person asked for it themselves while four-eyes approval is on (then
// another person must decide).
type approvalView struct {
	Approval approval.Approval
	Own      bool
}

// approvalPage shows exactly what one write will change and, while it is
// pending, the approve and decline forms.
func (c *console) approvalPage(w http.ResponseWriter, r *http.Request, req *request) {
	a, err := c.gate.Get(r.Context(), req.principal.Tenant, r.PathValue("id"))
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	l := layout{Title: "Approval", Nav: approvalsNav.Path}
	switch r.URL.Query().Get("done") {
	case "approved":
		l.Notice = "Approved. Whoever asked now makes this change, once, without a second ask: a console form by being submitted again as it is (its page says so), an agent by retrying with the same operation ID."
	case "declined":
		l.Notice = "Declined. Nothing was written; whoever asked is told so when they submit or retry."
	}
	c.render(w, r, req, http.StatusOK, "approval", l, approvalView{Approval: a, Own: c.gate.SelfApproval(a, req.principal.Subject)})
}

func (c *console) approve(w http.ResponseWriter, r *http.Request, req *request) {
	c.decide(w, r, req, true)
}
func (c *console) decline(w http.ResponseWriter, r *http.Request, req *request) {
	c.decide(w, r, req, false)
}

func (c *console) decide(w http.ResponseWriter, r *http.Request, req *request, yes bool) {
	a, err := c.gate.Decide(r.Context(), req.principal.Tenant, req.principal.Subject, r.PathValue("id"), yes, approval.ViaConsole)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	done := "declined"
	if a.Status == approval.StatusApproved {
		done = "approved"
	}
	http.Redirect(w, r, approvalsNav.Path+"/"+a.ID+"?done="+done, http.StatusSeeOther)
}
