package rest_test

import (
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestLinks(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		a, b := createTicket(t, e, "acme", "Fuser broken"), createTicket(t, e, "acme", "Printer on fire")
		post := func(ref, key, body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/" + ref + "/links", token: tok, key: key, body: body})
		}
		key := newKey()
		first := decode[contract.LinkList](t, post(a.Key, key, `{"link":"blocks","target":"`+b.Key+`"}`), http.StatusOK)
		if len(first.Links) != 1 || first.Links[0] != (contract.Link{Link: "blocks", ID: b.ID, Key: b.Key}) {
			t.Errorf("links = %+v", first.Links)
		}
		again := post(a.Key, key, `{"link":"blocks","target":"`+b.ID+`"}`)
		if decode[contract.LinkList](t, again, http.StatusOK); again.header.Get("Idempotent-Replayed") != "true" {
			t.Error("a retry was not answered as a replay")
		}
		wantProblem(t, post(a.Key, key, `{"link":"relates_to","target":"`+b.Key+`"}`), http.StatusUnprocessableEntity, "idempotency_conflict")
		p := wantProblem(t, post(b.Key, newKey(), `{"link":"blocks","target":"`+a.Key+`"}`), http.StatusBadRequest, "invalid_input")
		wantFieldError(t, p, "link", b.Key+" blocks "+a.Key)
		wantProblem(t, post(a.Key, newKey(), `{"link":"relates_to","target":"`+a.Key+`"}`), http.StatusBadRequest, "invalid_input")
		other := createTicket(t, e, "globex", "Elsewhere")
		wantProblem(t, post(a.Key, newKey(), `{"link":"relates_to","target":"`+other.ID+`"}`), http.StatusNotFound, "not_found")

		back := decode[contract.LinkList](t, do(t, e, req{path: "/api/v1/tickets/" + b.Key + "/links", token: tok}), http.StatusOK)
		if len(back.Links) != 1 || back.Links[0] != (contract.Link{Link: "blocked_by", ID: a.ID, Key: a.Key}) {
			t.Errorf("links of %s = %+v, want blocked_by %s", b.Key, back.Links, a.Key)
		}
		if count(t, d, "ticket_links", "acme") != 1 {
			t.Error("want one link stored")
		}
	})
}
