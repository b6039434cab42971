package console

import (
	"net/http"
	"net/url"

	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/tickets"
)

// bulkForm is one change to the tickets selected on the tickets page, as
// submitted; on a failure (or while it waits for approval) the bulk page
// shows it again, its key kept, so that submitting it again is the same
// operation.
type bulkForm struct {
	OperationID string
	// Refs are the selected tickets' keys.
	Refs []string
	// Status, Priority and Assignee are the change, each "" for no change;
	// Assignee bulkUnassign unassigns.
	Status, Priority, Assignee string
}

// bulkUnassign is the assignee choice that unassigns, as the tickets
// page's assignee filter spells "nobody".
const bulkUnassign = "none"

// bulkData is the bulk page and the tickets page's bulk bar.
type bulkData struct {
	Form       bulkForm
	Statuses   []tickets.Status
	Priorities []tickets.Priority
	People     []people.User
}

// update is the change the form asks for.
func (f bulkForm) update() tickets.TicketUpdate {
	var u tickets.TicketUpdate
	if f.Status != "" {
		s := tickets.Status(f.Status)
		u.Status = &s
	}
	if f.Priority != "" {
		p := tickets.Priority(f.Priority)
		u.Priority = &p
	}
	switch f.Assignee {
	case "":
	case bulkUnassign:
		none := ""
		u.Assignee = &none
	default:
		a := f.Assignee
		u.Assignee = &a
	}
	return u
}

// bulkChoices fills what the bulk form offers: statuses, priorities and
// the tenant directory.
func (c *console) bulkChoices(r *http.Request, req *request, f bulkForm) (bulkData, error) {
	people, err := c.svc.People().List(r.Context(), req.principal.Tenant, "")
	if err != nil {
		return bulkData{}, err
	}
	return bulkData{Form: f, Statuses: tickets.Statuses, Priorities: tickets.Priorities, People: people}, nil
}

// bulkUpdate applies one change to the selected tickets as one
// bulk_update_tickets operation. When the policy asks for approval (enough
// tickets, or making one urgent) the bulk page shows the change with its
// pending approval; approving there applies it, once.
func (c *console) bulkUpdate(w http.ResponseWriter, r *http.Request, req *request) {
	form := r.PostForm
	f := bulkForm{OperationID: form.Get("operation_id"), Refs: form["ref"],
		Status: form.Get("status"), Priority: form.Get("priority"), Assignee: form.Get("assignee")}
	var res tickets.BulkResult
	id, err := operationID(f.OperationID)
	if err == nil {
		err = c.approveSubmitted(r, req, id)
	}
	if err == nil {
		res, err = c.svc.BulkUpdateTickets(r.Context(), req.caller(), id, tickets.BulkUpdate{Refs: f.Refs, Update: f.update()})
	}
	if err != nil {
		p, status := c.problemOf(r, err)
		f.OperationID = formKey(f.OperationID, p.Code)
		d, cerr := c.bulkChoices(r, req, f)
		if cerr != nil {
			c.failErr(w, r, req, cerr)
			return
		}
		c.render(w, r, req, status, "bulk", layout{Title: "Change selected tickets", Nav: "/console/tickets", Problem: p,
			Pending: c.pendingFrom(err, req, "bulk-form", "apply the change")}, d)
		return
	}
	done := "bulk-updated"
	if res.Replayed {
		done = "bulk-replayed"
	}
	http.Redirect(w, r, "/console/tickets?"+url.Values{"done": {done}}.Encode(), http.StatusSeeOther)
}
