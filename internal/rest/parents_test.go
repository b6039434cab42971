package rest_test

import (
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestSubTasks(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		top := createTicket(t, e, "acme", "Office move")
		create := func(key, parent string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: key,
				body: `{"project_id":"support","title":"Pack the printers","parent":"` + parent + `"}`})
		}
		key := newKey()
		child := decode[ticket](t, create(key, top.Key), http.StatusCreated)
		if again := create(key, top.ID); again.header.Get("Idempotent-Replayed") != "true" || decode[ticket](t, again, http.StatusOK).ID != child.ID {
			t.Error("a retry naming the parent by UUID was not answered as a replay of the same ticket")
		}
		wantProblem(t, create(key, createTicket(t, e, "acme", "Other").Key), http.StatusUnprocessableEntity, "idempotency_conflict")
		list := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?parent=" + top.Key, token: tok}), http.StatusOK)
		if len(list.Tickets) != 1 || list.Tickets[0].ID != child.ID {
			t.Errorf("?parent= lists %+v, want %s", list.Tickets, child.Key)
		}
		patch := func(ref, body string) resp {
			return do(t, e, req{method: http.MethodPatch, path: "/api/v1/tickets/" + ref, token: tok, key: newKey(), body: body})
		}
		wantProblem(t, patch(top.Key, `{"parent":"`+child.Key+`"}`), http.StatusBadRequest, "invalid_input")
		other := createTicket(t, e, "globex", "Elsewhere")
		wantProblem(t, patch(child.Key, `{"parent":"`+other.ID+`"}`), http.StatusNotFound, "not_found")
		if r := patch(child.Key, `{"parent":null}`); r.status != http.StatusOK {
			t.Fatalf("detach: %d %s", r.status, r.body)
		}
		list = decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?parent=" + top.Key, token: tok}), http.StatusOK)
		if len(list.Tickets) != 0 {
			t.Errorf("after detach ?parent= lists %+v", list.Tickets)
		}
	})
}
