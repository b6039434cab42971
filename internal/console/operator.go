package console

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The Operations pages, and the operator's hand on an unknown or pending
// operation (docs/contract.md#tracker-backed-projects): reconcile it now, or
// record a finding. Both need tickets:admin, like their REST routes, and
// both are audited in the operation's history.

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

// attention lists the operation statuses an operator may have to act on,
// with what to do about each.
var attention = []struct {
	Status operations.Status
	Label  string
	Advice string
}{
	{operations.StatusUnknown, "Status unknown",
		"The write may or may not have happened (a reply was lost). The caller should retry with the same operation ID and input: that settles it without a duplicate. For a tracker-backed project, open the operation to reconcile it with the tracker now, or to record what you found there."},
	{operations.StatusPending, "Pending",
		"Claimed and not finished yet. It normally settles within seconds; one that stays pending is stuck work to investigate, and a retry with the same operation ID answers operation_in_progress meanwhile."},
	{operations.StatusFailed, "Failed",
		"A definitive, recorded rejection: nothing was created and repeating the same operation fails the same way. Fix the cause the error names and make the change again as a new operation."},
}

type operationsData struct {
	Status     operations.Status
	Advice     string
	Tabs       []struct{ Status, Label string }
	Operations []operations.Record
	NextURL    string
	FirstURL   string
	// CanSettle: the list is of unknown or pending operations and the
	// viewer may reconcile or resolve them (tickets:admin).
	CanSettle bool
}

func (c *console) operationsPage(w http.ResponseWriter, r *http.Request, req *request) {
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("id")); id != "" {
		http.Redirect(w, r, "/console/operations/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	d := operationsData{Status: operations.StatusUnknown}
	if s := q.Get("status"); s != "" {
		d.Status = operations.Status(s)
	}
	for _, a := range attention {
		d.Tabs = append(d.Tabs, struct{ Status, Label string }{string(a.Status), a.Label})
	}
	d.Advice = advice(d.Status)
	d.CanSettle = (d.Status == operations.StatusUnknown || d.Status == operations.StatusPending) && req.principal.HasScope(authn.ScopeAdmin)
	l := layout{Title: "Operations needing attention", Nav: "/console/operations"}
	if d.Advice == "" || d.Status == operations.StatusSucceeded {
		l.Problem = problemFor(errcode.InvalidInput, "status must be one of unknown, pending, failed; got "+string(d.Status))
		c.render(w, r, req, http.StatusBadRequest, "operations", l, d)
		return
	}
	cursor := q.Get("cursor")
	page, err := c.svc.ListOperations(r.Context(), req.principal.Tenant, tickets.ListOperationsParams{
		Status: d.Status, Limit: pageSize, Cursor: cursor})
	if err != nil {
		p, status := c.problemOf(r, err)
		l.Problem = p
		c.render(w, r, req, status, "operations", l, d)
		return
	}
	d.Operations = page.Operations
	if page.NextCursor != "" {
		d.NextURL = "/console/operations?" + url.Values{"status": {string(d.Status)}, "cursor": {page.NextCursor}}.Encode()
	}
	if cursor != "" {
		d.FirstURL = "/console/operations?" + url.Values{"status": {string(d.Status)}}.Encode()
	}
	c.render(w, r, req, http.StatusOK, "operations", l, d)
}

type operationData struct {
	Op   tickets.OperationStatus
	Next string
	// CanSettle: the viewer may reconcile or resolve it (tickets:admin)
	// and it is unknown or pending.
	CanSettle bool
}

// advice says what to do about an operation in status s.
func advice(s operations.Status) string {
	switch s {
	case operations.StatusSucceeded:
		return "Nothing to do: it committed. Retrying it with the same operation ID replays this result and changes nothing."
	case operations.StatusExpired:
		return "Nothing to do: it ran, longer ago than ticketd keeps operation records, and its record was pruned, so its result is no longer shown. Do not repeat it, under this operation ID or a new one."
	}
	for _, a := range attention {
		if a.Status == s {
			return a.Advice
		}
	}
	return ""
}

func (c *console) operationPage(w http.ResponseWriter, r *http.Request, req *request) {
	var op tickets.OperationStatus
	id, err := operationID(r.PathValue("id"))
	if err == nil {
		op, err = c.svc.GetOperation(r.Context(), req.principal.Tenant, id)
	}
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	l := layout{Title: "Operation " + op.Record.OperationID.String(), Nav: "/console/operations"}
	switch r.URL.Query().Get("done") {
	case "reconciled":
		l.Notice = "Reconciled: the status below is what the tracker shows now."
	case "resolved":
		l.Notice = "Your finding is recorded; every retry of this operation ID now answers it."
	}
	unsettled := op.Record.Status == operations.StatusUnknown || op.Record.Status == operations.StatusPending
	c.render(w, r, req, http.StatusOK, "operation", l, operationData{Op: op, Next: advice(op.Record.Status),
		CanSettle: unsettled && req.principal.HasScope(authn.ScopeAdmin)})
}
