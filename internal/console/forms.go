package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Every write below takes its input from the form alone, never from the
// ticket as it is when the POST arrives: a resubmitted form must be the same
// input, so that the ledger replays it instead of seeing a different change.

// formKey is the operation ID a form that failed with code is shown again
// with. It keeps the submitted one: after most errors nothing was recorded,
// and after the rest (outcome unknown, in progress, unavailable) submitting
// the same key again is exactly the safe retry. Only a conflict over the key
// itself, or a key that does not parse (tampered), needs a fresh one.
func formKey(submitted string, code errcode.Code) string {
	if _, err := operations.ParseID(submitted); err != nil || code == errcode.IdempotencyConflict {
		return newOperationID()
	}
	return submitted
}

// operationID parses an operation ID the console received (a form's key, a
// page's path), as an invalid operation_id when it does not parse: only a
// tampered form or a mistyped address carries one.
func operationID(s string) (operations.ID, error) {
	id, err := operations.ParseID(s)
	if err != nil {
		return operations.ID{}, &tickets.ValidationError{Fields: []tickets.FieldError{{Field: "operation_id", Message: err.Error()}}}
	}
	return id, nil
}

// splitLabels reads a comma- or newline-separated label list. Normalising
// (trim, case, duplicates) is the service's job.
func splitLabels(s string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ticketURL is the page of a ticket, with the notice done asks for.
func ticketURL(key, done, anchor string) string {
	return "/console/tickets/" + url.PathEscape(key) + "?" + url.Values{"done": {done}}.Encode() + anchor
}

func (c *console) createTicket(w http.ResponseWriter, r *http.Request, req *request) {
	f := newForm{
		OperationID: r.PostForm.Get("operation_id"), ProjectID: r.PostForm.Get("project_id"),
		Title: r.PostForm.Get("title"), Description: r.PostForm.Get("description"),
		Priority: r.PostForm.Get("priority"), Labels: r.PostForm.Get("labels"), Parent: r.PostForm.Get("parent"),
	}
	var res tickets.CreateResult
	id, err := operationID(f.OperationID)
	if err == nil {
		err = c.approveSubmitted(r, req, id)
	}
	if err == nil {
		res, err = c.svc.CreateTicket(r.Context(), req.caller(), id, tickets.NewTicket{
			ProjectID: f.ProjectID, Title: f.Title, Description: f.Description,
			Priority: tickets.Priority(f.Priority), Labels: splitLabels(f.Labels), Parent: f.Parent,
		})
	}
	if err != nil {
		p, status := c.problemOf(r, err)
		f.OperationID = formKey(f.OperationID, p.Code)
		c.renderNew(w, r, req, status, layout{Problem: p, Pending: c.pendingFrom(err, req, "new-ticket", "create the ticket")}, f)
		return
	}
	done := "created"
	if res.Replayed {
		done = "create-replayed"
	}
	http.Redirect(w, r, ticketURL(res.Ticket.Key, done, ""), http.StatusSeeOther)
}

// updateTicket serves the ticket page's three update forms, told apart by
// the form field: edit (fields), status (a transition), assign.
func (c *console) updateTicket(w http.ResponseWriter, r *http.Request, req *request) {
	form := r.PostForm
	opID, which := form.Get("operation_id"), form.Get("form")
	var in tickets.TicketUpdate
	if v := form.Get("if_version"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			c.fail(w, r, req, http.StatusBadRequest, problemFor(errcode.InvalidInput, "if_version must be a version number, got "+strconv.Quote(v)))
			return
		}
		in.IfVersion = &n
	}
	switch which {
	case "edit":
		title, description := form.Get("title"), form.Get("description")
		priority := tickets.Priority(form.Get("priority"))
		in.Title, in.Description, in.Priority = &title, &description, &priority
		in.AddLabels = splitLabels(form.Get("labels"))
		for _, l := range form["labels_before"] {
			if !slices.ContainsFunc(in.AddLabels, func(a string) bool { return strings.EqualFold(a, l) }) {
				in.RemoveLabels = append(in.RemoveLabels, l)
			}
		}
	case "status":
		status := tickets.Status(form.Get("status"))
		in.Status = &status
	case "assign":
		var assignee string
		switch form.Get("assign") {
		case "me":
			assignee = req.principal.Subject
		case "set":
			assignee = form.Get("assignee")
		}
		// "unassign" leaves it empty, which unassigns.
		in.Assignee = &assignee
	default:
		c.fail(w, r, req, http.StatusBadRequest, problemFor(errcode.InvalidInput, "form must be edit, status or assign, got "+strconv.Quote(which)))
		return
	}
	var res tickets.UpdateResult
	id, err := operationID(opID)
	if err == nil {
		err = c.approveSubmitted(r, req, id)
	}
	if err == nil {
		res, err = c.svc.UpdateTicket(r.Context(), req.caller(), id, r.PathValue("ref"), in)
	}
	if err != nil {
		c.updateFailed(w, r, req, which, err)
		return
	}
	done := "updated"
	switch {
	case res.Replayed:
		done = "update-replayed"
	case len(res.Changes) == 0:
		done = "unchanged"
	}
	http.Redirect(w, r, ticketURL(res.Ticket.Key, done, ""), http.StatusSeeOther)
}

// updateFailed shows the ticket page again with the error. A version
// conflict shows every form with the current values and version, as the
// contract asks: the person decides again. After any other error the failed
// form keeps what was submitted, its key and its version, so submitting it
// again is the same operation.
func (c *console) updateFailed(w http.ResponseWriter, r *http.Request, req *request, which string, err error) {
	p, status := c.problemOf(r, err)
	d, lerr := c.loadTicket(r, req, r.PathValue("ref"))
	if lerr != nil {
		c.failErr(w, r, req, err)
		return
	}
	if p.Code != errcode.VersionConflict {
		form := r.PostForm
		opID := formKey(form.Get("operation_id"), p.Code)
		version, _ := strconv.ParseInt(form.Get("if_version"), 10, 64) // parsed before the update ran
		switch which {
		case "edit":
			d.Edit = editForm{OperationID: opID, IfVersion: version, Title: form.Get("title"), Description: form.Get("description"),
				Priority: form.Get("priority"), Labels: form.Get("labels"), LabelsBefore: form["labels_before"]}
		case "status":
			d.Status = statusForm{OperationID: opID, IfVersion: version}
		case "assign":
			d.Assign = assignForm{OperationID: opID, IfVersion: version, Assignee: form.Get("assignee")}
		}
	}
	c.render(w, r, req, status, "ticket", layout{Title: d.Ticket.Key + " " + d.Ticket.Title, Nav: "/console/tickets", Problem: p,
		Pending: c.pendingFrom(err, req, which+"-form", "save the change")}, d)
}

func (c *console) addComment(w http.ResponseWriter, r *http.Request, req *request) {
	opID, body := r.PostForm.Get("operation_id"), r.PostForm.Get("body")
	var res tickets.CommentResult
	id, err := operationID(opID)
	if err == nil {
		res, err = c.svc.AddComment(r.Context(), req.caller(), id, r.PathValue("ref"), body)
	}
	if err != nil {
		p, status := c.problemOf(r, err)
		d, lerr := c.loadTicket(r, req, r.PathValue("ref"))
		if lerr != nil {
			c.failErr(w, r, req, err)
			return
		}
		d.Comment = commentForm{OperationID: formKey(opID, p.Code), Body: body}
		c.render(w, r, req, status, "ticket", layout{Title: d.Ticket.Key + " " + d.Ticket.Title, Nav: "/console/tickets", Problem: p}, d)
		return
	}
	done := "commented"
	if res.Replayed {
		done = "comment-replayed"
	}
	// The redirect names the ticket by its UUID: the comment result carries
	// no key, and the page shows the key anyway.
	http.Redirect(w, r, ticketURL(res.Comment.TicketID.String(), done, "#comments"), http.StatusSeeOther)
}
