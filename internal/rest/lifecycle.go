package rest

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/tickets"
)

type commentList struct {
	Comments   []contract.Comment `json:"comments"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

type eventList struct {
	Events     []contract.Event `json:"events"`
	NextCursor string           `json:"next_cursor,omitempty"`
}

// setETag tags a response with the ticket's version, the value If-Match
// takes back.
func setETag(w http.ResponseWriter, version int64) {
	w.Header().Set("ETag", strconv.Quote(strconv.FormatInt(version, 10)))
}

// ifMatch parses an If-Match header into the version it names: absent or
// "*" is no condition; otherwise exactly one strong entity tag holding a
// version, as ETag sends it ("3"). A weak or listed tag cannot name the one
// version an update must apply to.
func ifMatch(h http.Header) (*int64, error) {
	values := h.Values("If-Match")
	switch {
	case len(values) == 0:
		return nil, nil
	case len(values) > 1:
		return nil, invalid("If-Match", "must be given once")
	}
	v := strings.TrimSpace(values[0])
	if v == "*" {
		return nil, nil
	}
	unq, err := strconv.Unquote(v)
	n, perr := strconv.ParseInt(unq, 10, 64)
	if err != nil || !strings.HasPrefix(v, `"`) || perr != nil || n < 1 {
		return nil, invalid("If-Match", `must be the ticket's ETag, a quoted version such as "3" (from GET /api/v1/tickets/{id_or_key}), got `+strconv.Quote(v))
	}
	return &n, nil
}

// updateTicket is PATCH /api/v1/tickets/{id-or-key}: update_ticket with its
// operation ID in Idempotency-Key and its if_version in If-Match. The first
// call and every replay answer 200 with the ticket as it is now; a replay
// says Idempotent-Replayed: true and changes nothing.
func (a *api) updateTicket(w http.ResponseWriter, r *http.Request) {
	id, err := idempotencyKey(r.Header)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	key := id.String() // the stored, lower-case form every answer echoes
	version, err := ifMatch(r.Header)
	if err != nil {
		fail(w, r, err, key)
		return
	}
	var body contract.TicketUpdateFields
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, key)
		return
	}
	res, err := a.svc.UpdateTicket(r.Context(), caller(r), id, chi.URLParam(r, "id_or_key"), body.Update(version))
	var stale *tickets.VersionConflictError
	if errors.As(err, &stale) {
		// The precondition the caller sent failed (RFC 9110 §13.1.1); the
		// ETag tells it the version to re-read and decide on.
		setETag(w, stale.Current.Version)
		err = &statusError{http.StatusPreconditionFailed, err}
	}
	if err != nil {
		fail(w, r, err, key)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	setETag(w, res.Ticket.Version)
	writeJSON(w, http.StatusOK, contract.FromTicket(res.Ticket))
}

// addComment is POST /api/v1/tickets/{id-or-key}/comments: add_comment with
// its operation ID in Idempotency-Key. 201 the first time, 200 with
// Idempotent-Replayed: true and the same comment on a replay.
func (a *api) addComment(w http.ResponseWriter, r *http.Request) {
	id, err := idempotencyKey(r.Header)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	key := id.String() // the stored, lower-case form every answer echoes
	var body contract.CommentFields
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, key)
		return
	}
	res, err := a.svc.AddComment(r.Context(), caller(r), id, chi.URLParam(r, "id_or_key"), body.Body)
	if err != nil {
		fail(w, r, err, key)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, contract.FromComment(res.Comment))
		return
	}
	// Comments are read as the ticket's list, oldest first; that list is
	// where the new one lives.
	w.Header().Set("Location", "/api/v1/tickets/"+res.Comment.TicketID.String()+"/comments")
	writeJSON(w, http.StatusCreated, contract.FromComment(res.Comment))
}

// listComments is GET /api/v1/tickets/{id-or-key}/comments, oldest first.
func (a *api) listComments(w http.ResponseWriter, r *http.Request) {
	q, limit, err := pageParams(r)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	page, err := a.svc.ListComments(r.Context(), principal(r).Tenant, chi.URLParam(r, "id_or_key"),
		tickets.ListParams{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := commentList{Comments: make([]contract.Comment, len(page.Comments)), NextCursor: page.NextCursor}
	for i, c := range page.Comments {
		out.Comments[i] = contract.FromComment(c)
	}
	writeJSON(w, http.StatusOK, out)
}

// listEvents is GET /api/v1/tickets/{id-or-key}/events: the ticket's
// history, oldest first.
func (a *api) listEvents(w http.ResponseWriter, r *http.Request) {
	q, limit, err := pageParams(r)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	page, err := a.svc.ListEvents(r.Context(), principal(r).Tenant, chi.URLParam(r, "id_or_key"),
		tickets.ListParams{Limit: limit, Cursor: q.Get("cursor")})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	out := eventList{Events: make([]contract.Event, len(page.Events)), NextCursor: page.NextCursor}
	for i, e := range page.Events {
		out.Events[i] = contract.FromEvent(e)
	}
	writeJSON(w, http.StatusOK, out)
}

// bulkUpdateTickets is POST /api/v1/tickets/bulk: bulk_update_tickets with
// its operation ID in Idempotency-Key. All the tickets change or none do;
// the first call and every replay answer 200 with each ticket's version
// from this operation, and a replay says Idempotent-Replayed: true and
// changes nothing.
func (a *api) bulkUpdateTickets(w http.ResponseWriter, r *http.Request) {
	id, err := idempotencyKey(r.Header)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	key := id.String() // the stored, lower-case form every answer echoes
	var body contract.BulkUpdateFields
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, key)
		return
	}
	res, err := a.svc.BulkUpdateTickets(r.Context(), caller(r), id, body.Bulk())
	if err != nil {
		fail(w, r, err, key)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeJSON(w, http.StatusOK, contract.BulkResult{OperationID: res.OperationID.String(), Tickets: contract.FromBulkItems(res.Items)})
}
