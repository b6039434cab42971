package rest_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
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

// TestGetTicketShowsFamily reads a ticket's parent and children on GET, as
// get_ticket shows them: a sub-task is on its parent's GET, the sub-task's
// GET names the parent, and neither version moves for it.
func TestGetTicketShowsFamily(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		get := func(tok, ref string) resp { return do(t, e, req{path: "/api/v1/tickets/" + ref, token: tok}) }
		top := createTicket(t, e, "acme", "Office move")
		alone := decode[contract.TicketWithFamily](t, get(tok, top.Key), http.StatusOK)
		if alone.Parent != nil || alone.Children.Count != 0 || alone.Children.Keys == nil || len(alone.Children.Keys) != 0 {
			t.Errorf("a ticket without family reads parent %+v, children %+v; want null and {0, []}", alone.Parent, alone.Children)
		}
		var keys []string
		for _, title := range []string{"Pack the printers", "Book the van"} {
			child := decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: newKey(),
				body: `{"project_id":"support","title":"` + title + `","parent":"` + top.Key + `"}`}), http.StatusCreated)
			keys = append(keys, child.Key)
		}
		r := get(tok, top.Key)
		parent := decode[contract.TicketWithFamily](t, r, http.StatusOK)
		if parent.Children.Count != 2 || !slices.Equal(parent.Children.Keys, keys) {
			t.Errorf("the parent's children read %+v, want 2 %v", parent.Children, keys)
		}
		if parent.Key != top.Key || parent.Version != 1 || r.header.Get("ETag") != `"1"` {
			t.Errorf("the parent reads key %s version %d ETag %s; want %s at version 1: children are not its fields",
				parent.Key, parent.Version, r.header.Get("ETag"), top.Key)
		}
		child := decode[contract.TicketWithFamily](t, get(tok, keys[0]), http.StatusOK)
		if child.Parent == nil || *child.Parent != (contract.TicketRef{ID: top.ID, Key: top.Key}) || child.Children.Count != 0 {
			t.Errorf("the sub-task reads parent %+v, children %+v; want %s and none", child.Parent, child.Children, top.Key)
		}
		wantProblem(t, get(token(t, "globex", authn.ScopeRead), top.Key), http.StatusNotFound, "not_found")
		wantProblem(t, get(token(t, "globex", authn.ScopeRead), top.ID), http.StatusNotFound, "not_found")
	})
}
