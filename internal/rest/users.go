package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/people"
)

// listUsers is GET /api/v1/users: the tenant's directory, query narrowing it.
func (a *api) listUsers(w http.ResponseWriter, r *http.Request) {
	q, err := queryParams(r, "query")
	if err != nil {
		fail(w, r, err, "")
		return
	}
	us, err := a.svc.People().List(r.Context(), principal(r).Tenant, q.Get("query"))
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, contract.UserList{Users: contract.FromUsers(us)})
}

// createUser is POST /api/v1/users: 201 with the user, 409 when the ID is taken.
func (a *api) createUser(w http.ResponseWriter, r *http.Request) {
	var body contract.NewUser
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, "")
		return
	}
	u, err := a.svc.People().Create(r.Context(), principal(r).Tenant, people.User{ID: body.ID, DisplayName: body.DisplayName, Email: body.Email})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusCreated, contract.FromUser(u))
}

// updateUser is PATCH /api/v1/users/{user_id}.
func (a *api) updateUser(w http.ResponseWriter, r *http.Request) {
	var body contract.UserPatch
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, "")
		return
	}
	u, err := a.svc.People().Update(r.Context(), principal(r).Tenant, chi.URLParam(r, "user_id"),
		people.Patch{DisplayName: body.DisplayName, Email: body.Email, Active: body.Active})
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, contract.FromUser(u))
}
