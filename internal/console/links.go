package console

import (
	"net/http"

	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/tickets"
)

// linkForm is the ticket page's add-a-link form.
type linkForm struct {
	OperationID, Kind, Target string
}

// linkView is one of the ticket's links, as this ticket's end reads it, with
// the key its remove button submits: one form each, so removing one link
// twice (a double click, a resubmit) is one change.
type linkView struct {
	links.Link
	RemoveID string
}

// linkViews renders the links with a fresh key for each remove form.
func linkViews(all []links.Link) []linkView {
	out := make([]linkView, len(all))
	for i, l := range all {
		out[i] = linkView{Link: l, RemoveID: newOperationID()}
	}
	return out
}

// linkTicket adds or removes one link through the ledger, as link_tickets
// does: the form's operation ID makes a resubmitted form one change.
func (c *console) linkTicket(w http.ResponseWriter, r *http.Request, req *request) {
	form := r.PostForm
	f := linkForm{OperationID: form.Get("operation_id"), Kind: form.Get("link"), Target: form.Get("target")}
	remove := form.Get("remove") == "1"
	var res tickets.LinkResult
	id, err := operationID(f.OperationID)
	if err == nil {
		res, err = c.svc.LinkTickets(r.Context(), req.caller(), id, tickets.LinkChange{
			Ticket: r.PathValue("ref"), Kind: links.Kind(f.Kind), Target: f.Target, Remove: remove})
	}
	if err != nil {
		p, status := c.problemOf(r, err)
		d, lerr := c.loadTicket(r, req, r.PathValue("ref"))
		if lerr != nil {
			c.failErr(w, r, req, err)
			return
		}
		if !remove {
			// The add form keeps what was typed and its key; a failed
			// remove shows the links as they are, each with a fresh key.
			f.OperationID = formKey(f.OperationID, p.Code)
			d.Link = f
		}
		c.render(w, r, req, status, "ticket", layout{Title: d.Ticket.Key + " " + d.Ticket.Title, Nav: "/console/tickets", Problem: p}, d)
		return
	}
	done := "linked"
	switch {
	case res.Replayed:
		done = "link-replayed"
	case !res.Changed:
		done = "link-unchanged"
	case remove:
		done = "unlinked"
	}
	http.Redirect(w, r, ticketURL(res.Ticket.Key, done, "#links"), http.StatusSeeOther)
}
