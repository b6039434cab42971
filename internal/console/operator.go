package console

import (
	"net/http"
	"net/url"

	"github.com/ticketd/ticketd/internal/tickets"
)

// The operator's hand on an unknown or pending operation (docs/contract.md#tracker-backed-projects):
// reconcile it now, or record a finding. Both need tickets:admin, like
// their REST routes, and both are audited in the operation's history.

func operationURL(id, done string) string {
	return "/console/operations/" + url.PathEscape(id) + "?" + url.Values{"done": {done}}.Encode()
}

func (c *console) reconcileOperation(w http.ResponseWriter, r *http.Request, req *request) {
	id, err := operationID(r.PathValue("id"))
	if err == nil {
		_, err = c.svc.ReconcileOperation(r.Context(), req.caller(), id, r.PostForm.Get("action"))
	}
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	http.Redirect(w, r, operationURL(r.PathValue("id"), "reconciled"), http.StatusSeeOther)
}

func (c *console) resolveOperation(w http.ResponseWriter, r *http.Request, req *request) {
	f := r.PostForm
	id, err := operationID(r.PathValue("id"))
	if err == nil {
		_, err = c.svc.ResolveOperation(r.Context(), req.caller(), id, f.Get("action"),
			tickets.Resolution{Outcome: f.Get("outcome"), ExternalID: f.Get("external_id"), Reason: f.Get("reason")})
	}
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	http.Redirect(w, r, operationURL(r.PathValue("id"), "resolved"), http.StatusSeeOther)
}
