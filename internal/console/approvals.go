package console

import (
	"net/http"

	"github.com/ticketd/ticketd/internal/approval"
)

// approvalsNav is the pending-approvals entry, shown when the service gates
// writes behind approvals.
var approvalsNav = nav{"/console/approvals", "Approvals"}

// approvalsPage lists the pending approvals the signed-in person was asked
// for: those requested by their own subject (docs/contract.md#approval binds an approval
// to the user who was asked).
func (c *console) approvalsPage(w http.ResponseWriter, r *http.Request, req *request) {
	list, err := c.gate.ListPending(r.Context(), req.principal.Tenant, req.principal.Subject, pageSize)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	c.render(w, r, req, http.StatusOK, "approvals", layout{Title: "Approvals", Nav: approvalsNav.Path}, list)
}

// approvalPage shows exactly what one write will change and, while it is
// pending, the approve and decline forms. Another person, or another
// tenant, gets 404, as if it did not exist.
func (c *console) approvalPage(w http.ResponseWriter, r *http.Request, req *request) {
	a, err := c.gate.Get(r.Context(), req.principal.Tenant, req.principal.Subject, r.PathValue("id"))
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	l := layout{Title: "Approval", Nav: approvalsNav.Path}
	switch r.URL.Query().Get("done") {
	case "approved":
		l.Notice = "Approved. The agent's retry with the same operation ID now makes this change, once."
	case "declined":
		l.Notice = "Declined. Nothing was written; the agent is told so when it retries."
	}
	c.render(w, r, req, http.StatusOK, "approval", l, a)
}

func (c *console) approve(w http.ResponseWriter, r *http.Request, req *request) {
	c.decide(w, r, req, true)
}
func (c *console) decline(w http.ResponseWriter, r *http.Request, req *request) {
	c.decide(w, r, req, false)
}

func (c *console) decide(w http.ResponseWriter, r *http.Request, req *request, yes bool) {
	a, err := c.gate.Decide(r.Context(), req.principal.Tenant, req.principal.Subject, r.PathValue("id"), yes)
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
