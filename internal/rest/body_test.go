package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestStrictRequestBodies(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		write := token(t, tenantA, authn.ScopeWrite)
		key := newKey() // every rejected request uses it; it must stay usable

		for _, c := range []struct {
			name, ctype, body string
			status            int
			field, message    string
		}{
			{"MalformedJSON", "", `{"project_id":"support","title":`, 400, "body", "not valid JSON"},
			{"NotAnObject", "", `["support"]`, 400, "body", "JSON object"},
			{"EmptyBody", "application/json", "", 400, "body", "empty"},
			{"TrailingData", "", ticketBody("a") + `{"title":"b"}`, 400, "body", "nothing after it"},
			{"TrailingGarbage", "", ticketBody("a") + ` x`, 400, "body", ""},
			{"UnknownField", "", `{"project_id":"support","title":"a","assignee":"bob"}`, 400, "assignee", "not a known field"},
			{"MiscasedField", "", `{"project_id":"support","Title":"a"}`, 400, "Title", "not a known field"},
			{"DuplicateField", "", `{"project_id":"support","title":"a","title":"b"}`, 400, "title", "more than once"},
			{"OperationIDInBody", "", `{"operation_id":"` + key + `","project_id":"support","title":"a"}`, 400, "operation_id", "not a known field"},
			{"TenantIDInBody", "", `{"tenant_id":"globex","project_id":"support","title":"a"}`, 400, "tenant_id", "comes from your token"},
			{"WrongType", "", `{"project_id":"support","title":42}`, 400, "title", "must be a JSON string"},
			{"NullField", "", `{"project_id":"support","title":"a","description":null}`, 400, "description", "must not be null"},
			{"WrongElementType", "", `{"project_id":"support","title":"a","labels":[1]}`, 400, "labels", "string"},
			{"InvalidUTF8", "", "{\"project_id\":\"support\",\"title\":\"\xff\"}", 400, "body", "UTF-8"},
			{"TextPlain", "text/plain", ticketBody("a"), 415, "Content-Type", "application/json"},
			{"FormEncoded", "application/x-www-form-urlencoded", "title=a", 415, "Content-Type", "application/json"},
			{"Latin1", "application/json; charset=iso-8859-1", ticketBody("a"), 415, "Content-Type", "utf-8"},
			{"Oversized", "", `{"project_id":"support","title":"a","description":"` + strings.Repeat("x", 300<<10) + `"}`, 413, "body", "at most"},
		} {
			t.Run(c.name, func(t *testing.T) {
				r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, ctype: c.ctype, body: c.body})
				wantFieldError(t, wantProblem(t, r, c.status, "invalid_input"), c.field, c.message)
				wantNothingWritten(t, d, tenantA)
			})
		}
		t.Run("MissingContentTypeIs415", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key,
				headers: http.Header{"Content-Type": nil}})
			wantFieldError(t, wantProblem(t, r, http.StatusUnsupportedMediaType, "invalid_input"), "Content-Type", "required")
		})
		t.Run("TooLongTitleIsTheServicesFieldError", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key,
				body: `{"project_id":"support","title":"` + strings.Repeat("é", 201) + `"}`})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "title", "200")
			wantNothingWritten(t, d, tenantA)
		})
		t.Run("ProjectBodiesAreStrictToo", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: admin(t, tenantA),
				body: `{"id":"ops","key":"OPS","name":"Ops","tenant_id":"globex"}`})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "tenant_id", "comes from your token")
			if n := count(t, d, "projects", tenantA) + count(t, d, "projects", tenantB); n != 2 {
				t.Errorf("%d projects, want the 2 seeded", n)
			}
		})
		t.Run("TheKeyStaysUsable", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, body: ticketBody("Finally")})
			decode[ticket](t, r, http.StatusCreated)
		})
	})
}

func TestUnroutedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t))
	tok := admin(t, tenantA)

	t.Run("UnknownPathIs404Problem", func(t *testing.T) {
		wantProblem(t, do(t, e, req{path: "/api/v1/nope", token: tok}), http.StatusNotFound, "not_found")
	})
	t.Run("WrongMethodIs405WithAllow", func(t *testing.T) {
		r := do(t, e, req{method: http.MethodDelete, path: "/api/v1/tickets", token: tok})
		wantProblem(t, r, http.StatusMethodNotAllowed, "invalid_input")
		if got := r.header.Values("Allow"); strings.Join(got, ",") != "GET,POST" {
			t.Errorf("Allow = %v, want GET, POST", got)
		}
	})
}
