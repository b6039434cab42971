package rest_test

import (
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestUsers(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		adm, reader := admin(t, "acme"), token(t, "acme", authn.ScopeRead)
		post := func(tok, body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/users", token: tok, body: body})
		}
		wantProblem(t, post(reader, `{"id":"zoe"}`), http.StatusForbidden, "forbidden")
		zoe := decode[contract.User](t, post(adm, `{"id":" zoe ","display_name":"Zoe Q","email":"zoe@acme.test"}`), http.StatusCreated)
		if zoe.ID != "zoe" || !zoe.Active || zoe.DisplayName != "Zoe Q" {
			t.Errorf("created = %+v", zoe)
		}
		wantProblem(t, post(adm, `{"id":"zoe"}`), http.StatusConflict, "already_exists")
		wantProblem(t, post(adm, `{"id":"  "}`), http.StatusBadRequest, "invalid_input")

		list := decode[contract.UserList](t, do(t, e, req{path: "/api/v1/users?query=ZOE", token: reader}), http.StatusOK)
		if len(list.Users) != 1 || list.Users[0].Email != "zoe@acme.test" {
			t.Errorf("users?query=ZOE = %+v", list.Users)
		}
		patch := func(tok, id, body string) resp {
			return do(t, e, req{method: http.MethodPatch, path: "/api/v1/users/" + id, token: tok, body: body})
		}
		wantProblem(t, patch(reader, "zoe", `{"active":false}`), http.StatusForbidden, "forbidden")
		if got := decode[contract.User](t, patch(adm, "zoe", `{"active":false}`), http.StatusOK); got.Active || got.DisplayName != "Zoe Q" {
			t.Errorf("patched = %+v, want inactive with its name kept", got)
		}
		wantProblem(t, patch(adm, "nobody", `{"active":false}`), http.StatusNotFound, "not_found")

		// The directory is the tenant's: another's sees none of it, and
		// an inactive user cannot be assigned.
		if other := decode[contract.UserList](t, do(t, e, req{path: "/api/v1/users?query=zoe", token: token(t, "globex", authn.ScopeRead)}), http.StatusOK); len(other.Users) != 0 {
			t.Errorf("globex sees %+v", other.Users)
		}
		tk := createTicket(t, e, "acme", "Printer on fire")
		writer := token(t, "acme", authn.ScopeWrite)
		p := wantProblem(t, patch2(t, e, writer, tk.Key, `{"assignee":"zoe"}`), http.StatusBadRequest, "invalid_input")
		wantFieldError(t, p, "assignee", "not an active user")
	})
}

func patch2(tb testing.TB, e *env, tok, ref, body string) resp {
	tb.Helper()
	return do(tb, e, req{method: http.MethodPatch, path: "/api/v1/tickets/" + ref, token: tok, key: newKey(), body: body})
}
