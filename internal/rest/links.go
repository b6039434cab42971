package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/tickets"
)

// linkTickets is POST /api/v1/tickets/{id-or-key}/links: link_tickets with
// its operation ID in Idempotency-Key. 200 with the ticket's links either
// way; a replay adds Idempotent-Replayed: true.
func (a *api) linkTickets(w http.ResponseWriter, r *http.Request) {
	id, err := idempotencyKey(r.Header)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	key := id.String() // the stored, lower-case form every answer echoes
	var body contract.LinkFields
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, key)
		return
	}
	res, err := a.svc.LinkTickets(r.Context(), caller(r), id, tickets.LinkChange{
		Ticket: chi.URLParam(r, "id_or_key"), Kind: links.Kind(body.Link), Target: body.Target, Remove: body.Remove,
	})
	if err != nil {
		fail(w, r, err, key)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, contract.LinkList{Links: contract.FromLinks(res.Links)})
}

// listLinks is GET /api/v1/tickets/{id-or-key}/links.
func (a *api) listLinks(w http.ResponseWriter, r *http.Request) {
	tenant := principal(r).Tenant
	t, err := a.svc.GetTicket(r.Context(), tenant, chi.URLParam(r, "id_or_key"))
	if err != nil {
		fail(w, r, err, "")
		return
	}
	ticketLinks, err := a.svc.TicketLinks(r.Context(), tenant, t.ID)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, contract.LinkList{Links: contract.FromLinks(ticketLinks)})
}
