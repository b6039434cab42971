package rest_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestTickets(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		read := token(t, tenantA, authn.ScopeRead)

		key := newKey()
		r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: token(t, tenantA, authn.ScopeWrite),
			key: key, body: `{"project_id":"support","title":"  Printer on fire ","description":"Smoke.","priority":"urgent","labels":["Office","hardware","office"]}`})
		created := decode[ticket](t, r, http.StatusCreated)

		t.Run("CreateAnswers201WithLocationAndTheTicket", func(t *testing.T) {
			if got, want := r.header.Get("Location"), "/api/v1/tickets/"+created.ID; got != want {
				t.Errorf("Location = %q, want %q", got, want)
			}
			if r.header.Get("Idempotent-Replayed") != "" {
				t.Error("first create carries Idempotent-Replayed")
			}
			if r.header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type = %q", r.header.Get("Content-Type"))
			}
			want := ticket{ID: created.ID, Key: "SUP-1", ProjectID: "support", Title: "Printer on fire", Description: "Smoke.",
				Priority: "urgent", Status: "open", Labels: []string{"hardware", "office"}, Reporter: "operator@acme",
				CreatedAt: created.CreatedAt, UpdatedAt: created.UpdatedAt}
			if !equalTicket(created, want) || created.CreatedAt == "" {
				t.Errorf("ticket = %+v, want %+v", created, want)
			}
		})
		t.Run("GetByLocationAndByKeyInAnyCase", func(t *testing.T) {
			for _, path := range []string{r.header.Get("Location"), "/api/v1/tickets/SUP-1", "/api/v1/tickets/sup-1"} {
				got := decode[ticket](t, do(t, e, req{path: path, token: read}), http.StatusOK)
				if !equalTicket(got, created) {
					t.Errorf("GET %s = %+v, want %+v", path, got, created)
				}
			}
		})
		t.Run("GetMissingTicketIs404", func(t *testing.T) {
			for _, path := range []string{"/api/v1/tickets/SUP-99", "/api/v1/tickets/0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c"} {
				wantProblem(t, do(t, e, req{path: path, token: read}), http.StatusNotFound, "not_found")
			}
		})
		t.Run("GetMalformedIDIs400", func(t *testing.T) {
			p := wantProblem(t, do(t, e, req{path: "/api/v1/tickets/not%20a%20key", token: read}), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "id", "UUID or a key")
		})
		t.Run("OperationOfTheCreateHasTheTicket", func(t *testing.T) {
			op := decode[operation](t, do(t, e, req{path: "/api/v1/operations/" + key, token: read}), http.StatusOK)
			if op.OperationID != key || op.Action != "create_ticket" || op.Status != "succeeded" || op.TicketID != created.ID ||
				op.Ticket == nil || op.Ticket.Key != "SUP-1" || op.NextStep == "" {
				t.Errorf("operation = %+v", op)
			}
		})
		t.Run("OperationNextStepIsInRequestTerms", func(t *testing.T) {
			// An operator is told what to send, not which MCP tool to call.
			op := decode[operation](t, do(t, e, req{path: "/api/v1/operations/" + key, token: read}), http.StatusOK)
			if !strings.Contains(op.NextStep, "Idempotency-Key") || strings.Contains(op.NextStep, "operation_id") ||
				strings.Contains(op.NextStep, "create_ticket") || !strings.Contains(op.NextStep, "ticket_id") {
				t.Errorf("next_step = %q, want the request's terms (Idempotency-Key) and no tool or argument name", op.NextStep)
			}
		})
		t.Run("ListFiltersByProjectAndStatus", func(t *testing.T) {
			admin := admin(t, tenantA)
			decode[map[string]any](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: admin,
				body: `{"id":"ops","key":"OPS","name":"Operations"}`}), http.StatusCreated)
			ops := decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: admin, key: newKey(),
				body: `{"project_id":"ops","title":"Rotate keys"}`}), http.StatusCreated)
			if ops.Key != "OPS-1" || ops.Priority != "normal" || ops.Labels == nil {
				t.Errorf("ops ticket = %+v", ops)
			}
			for query, want := range map[string][]string{
				"":                                    {ops.ID, created.ID},
				"?project_id=support":                 {created.ID},
				"?project_id=ops&status=open":         {ops.ID},
				"?status=closed":                      {},
				"?project_id=nope":                    {},
				"?status=open&limit=1&project_id=ops": {ops.ID},
			} {
				got := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets" + query, token: read}), http.StatusOK)
				if ids := ticketIDs(got.Tickets); !slices.Equal(ids, want) || got.Tickets == nil {
					t.Errorf("GET /api/v1/tickets%s = %v, want %v (never null)", query, ids, want)
				}
			}
		})
		t.Run("BadListParametersAre400", func(t *testing.T) {
			for query, field := range map[string]string{
				"?status=bogus":              "status",
				"?limit=abc":                 "limit",
				"?limit=0":                   "limit",
				"?limit=201":                 "limit",
				"?limit=-1":                  "limit",
				"?state=open":                "state",
				"?status=open&status=closed": "status",
				"?cursor=forged":             "cursor",
			} {
				r := do(t, e, req{path: "/api/v1/tickets" + query, token: read})
				wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), field, "")
			}
		})
	})
}

func TestProjects(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := admin(t, tenantA)
		type project struct{ ID, Key, Name string }
		type projectList struct{ Projects []project }

		t.Run("ListHasTheSeededProject", func(t *testing.T) {
			got := decode[projectList](t, do(t, e, req{path: "/api/v1/projects", token: token(t, tenantA, authn.ScopeRead)}), http.StatusOK)
			if want := []project{{"support", "SUP", "Support"}}; !slices.Equal(got.Projects, want) {
				t.Errorf("projects = %+v, want %+v", got.Projects, want)
			}
		})
		t.Run("AdminCreatesAProject", func(t *testing.T) {
			got := decode[project](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: tok,
				body: `{"id":" billing ","key":"bil","name":"Billing"}`}), http.StatusCreated)
			if want := (project{"billing", "BIL", "Billing"}); got != want {
				t.Errorf("created %+v, want %+v", got, want)
			}
			list := decode[projectList](t, do(t, e, req{path: "/api/v1/projects", token: tok}), http.StatusOK)
			if want := []project{{"billing", "BIL", "Billing"}, {"support", "SUP", "Support"}}; !slices.Equal(list.Projects, want) {
				t.Errorf("projects = %+v, want %+v", list.Projects, want)
			}
			other := decode[projectList](t, do(t, e, req{path: "/api/v1/projects", token: admin(t, tenantB)}), http.StatusOK)
			if len(other.Projects) != 1 {
				t.Errorf("tenant %s sees %+v, want only its own project", tenantB, other.Projects)
			}
		})
		t.Run("DuplicateProjectIs409", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: tok, body: `{"id":"support","key":"SUP2","name":"Again"}`})
			wantProblem(t, r, http.StatusConflict, "already_exists")
		})
		t.Run("InvalidProjectListsEveryField", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: tok, body: `{"id":"Bad Id!","key":"1x","name":""}`})
			p := wantProblem(t, r, http.StatusBadRequest, "invalid_input")
			for _, f := range []string{"id", "key", "name"} {
				wantFieldError(t, p, f, "must")
			}
		})
		t.Run("ListRejectsQueryParameters", func(t *testing.T) {
			r := do(t, e, req{path: "/api/v1/projects?limit=1", token: tok})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "limit", "not a known")
		})
	})
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		key := newKey()
		mine := decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: admin(t, tenantA),
			key: key, body: ticketBody("Acme only")}), http.StatusCreated)
		theirs := admin(t, tenantB)

		t.Run("AnotherTenantsTicketIs404ByIDAndByKey", func(t *testing.T) {
			for _, path := range []string{"/api/v1/tickets/" + mine.ID, "/api/v1/tickets/" + mine.Key} {
				wantProblem(t, do(t, e, req{path: path, token: theirs}), http.StatusNotFound, "not_found")
			}
		})
		t.Run("AnotherTenantsOperationIs404", func(t *testing.T) {
			p := wantProblem(t, do(t, e, req{path: "/api/v1/operations/" + key, token: theirs}), http.StatusNotFound, "not_found")
			if p.OperationID != key {
				t.Errorf("operation_id = %q, want %q", p.OperationID, key)
			}
		})
		t.Run("ListsShowOnlyTheCallersTenant", func(t *testing.T) {
			if got := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets", token: theirs}), http.StatusOK); len(got.Tickets) != 0 {
				t.Errorf("tenant %s lists %+v", tenantB, got.Tickets)
			}
			if got := decode[operationList](t, do(t, e, req{path: "/api/v1/operations", token: theirs}), http.StatusOK); len(got.Operations) != 0 {
				t.Errorf("tenant %s lists %+v", tenantB, got.Operations)
			}
		})
		t.Run("SameKeyInAnotherTenantIsAnotherOperation", func(t *testing.T) {
			got := decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: theirs,
				key: key, body: ticketBody("Globex, same key")}), http.StatusCreated)
			if got.ID == mine.ID || got.Key != "SUP-1" {
				t.Errorf("globex ticket = %+v", got)
			}
		})
		t.Run("AnotherTenantsCursorIs400", func(t *testing.T) {
			for range 2 {
				createTicket(t, e, tenantA, "more")
			}
			page := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?limit=1", token: admin(t, tenantA)}), http.StatusOK)
			if page.NextCursor == "" {
				t.Fatal("no next_cursor")
			}
			r := do(t, e, req{path: "/api/v1/tickets?limit=1&cursor=" + url.QueryEscape(page.NextCursor), token: theirs})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "cursor", "")
		})
		t.Run("TenantIDInTheBodyIsRejected", func(t *testing.T) {
			total := func() int64 { return count(t, d, "tickets", tenantA) + count(t, d, "tickets", tenantB) }
			before := total()
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: theirs, key: newKey(),
				body: `{"tenant_id":"acme","project_id":"support","title":"Sneaky"}`})
			p := wantProblem(t, r, http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "tenant_id", "comes from your token")
			if n := total(); n != before {
				t.Errorf("%d tickets in all, want %d: the rejected request wrote something", n, before)
			}
		})
	})
}

func ticketIDs(ts []ticket) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	return ids
}

// equalTicket compares two ticket objects. Times are compared to the
// microsecond: the create answer carries the service's in-memory clock
// reading, while PostgreSQL stores microseconds (reported to tickets' owner).
func equalTicket(a, b ticket) bool {
	return a.ID == b.ID && a.Key == b.Key && a.ProjectID == b.ProjectID && a.Title == b.Title &&
		a.Description == b.Description && a.Priority == b.Priority && a.Status == b.Status &&
		slices.Equal(a.Labels, b.Labels) && a.Reporter == b.Reporter &&
		sameMicrosecond(a.CreatedAt, b.CreatedAt) && sameMicrosecond(a.UpdatedAt, b.UpdatedAt)
}

func sameMicrosecond(a, b string) bool {
	ta, errA := time.Parse(time.RFC3339Nano, a)
	tb, errB := time.Parse(time.RFC3339Nano, b)
	return errA == nil && errB == nil && ta.Truncate(time.Microsecond).Equal(tb.Truncate(time.Microsecond))
}
