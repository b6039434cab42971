package rest_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func patch(tb testing.TB, e *env, tok, ref, key, ifMatch, body string) resp {
	tb.Helper()
	r := req{method: http.MethodPatch, path: "/api/v1/tickets/" + ref, token: tok, key: key, body: body}
	if ifMatch != "" {
		r.headers = http.Header{"If-Match": {ifMatch}}
	}
	return do(tb, e, r)
}

func TestPatchTicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		tk := createTicket(t, e, "acme", "Printer on fire")
		if got := do(t, e, req{path: "/api/v1/tickets/" + strings.ToLower(tk.Key), token: tok}); got.header.Get("ETag") != `"1"` {
			t.Errorf("GET ETag = %q, want \"1\"", got.header.Get("ETag"))
		}

		key, body := newKey(), `{"status":"in_progress","assignee":"agent","add_labels":["Triaged"]}`
		first := patch(t, e, tok, tk.Key, key, `"1"`, body)
		updated := decode[ticket](t, first, http.StatusOK)
		if updated.Version != 2 || updated.Status != "in_progress" || updated.Assignee == nil || *updated.Assignee != "agent" ||
			first.header.Get("ETag") != `"2"` || first.header.Get("Idempotent-Replayed") != "" {
			t.Errorf("first PATCH = %+v (ETag %q, replayed %q), want version 2 in_progress for agent, ETag \"2\", not replayed",
				updated, first.header.Get("ETag"), first.header.Get("Idempotent-Replayed"))
		}

		t.Run("ReplayIs200AndChangesNothing", func(t *testing.T) {
			again := patch(t, e, tok, tk.ID, key, `"1"`, body) // the UUID and the key are the same input
			if got := decode[ticket](t, again, http.StatusOK); got.Version != 2 || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay = %+v (replayed %q), want version 2 replayed", got, again.header.Get("Idempotent-Replayed"))
			}
		})
		t.Run("ReusedKeyWithOtherInputIs422", func(t *testing.T) {
			wantProblem(t, patch(t, e, tok, tk.Key, key, "", `{"status":"resolved"}`), http.StatusUnprocessableEntity, "idempotency_conflict")
		})
		t.Run("StaleIfMatchIs412", func(t *testing.T) {
			stale := patch(t, e, tok, tk.Key, newKey(), `"1"`, `{"priority":"low"}`)
			wantProblem(t, stale, http.StatusPreconditionFailed, "version_conflict")
			if stale.header.Get("ETag") != `"2"` {
				t.Errorf("412 ETag = %q, want the current version \"2\"", stale.header.Get("ETag"))
			}
		})
		t.Run("BadRequestsWriteNothing", func(t *testing.T) {
			for _, r := range map[string]struct{ key, ifMatch, body, field string }{
				"NoKey":        {"", "", `{"priority":"low"}`, "Idempotency-Key"},
				"WeakIfMatch":  {newKey(), `W/"2"`, `{"priority":"low"}`, "If-Match"},
				"NothingToDo":  {newKey(), "", `{}`, "update"},
				"UnknownField": {newKey(), "", `{"priority":"low","colour":"red"}`, "colour"},
				"TenantID":     {newKey(), "", `{"priority":"low","tenant_id":"globex"}`, "tenant_id"},
				"NullAssignee": {newKey(), "", `{"status":"closed","assignee":null}`, "assignee"},
			} {
				p := wantProblem(t, patch(t, e, tok, tk.Key, r.key, r.ifMatch, r.body), http.StatusBadRequest, "invalid_input")
				wantFieldError(t, p, r.field, "")
			}
			closing := patch(t, e, tok, tk.Key, newKey(), "", `{"status":"closed"}`)
			decode[ticket](t, closing, http.StatusOK)
			p := wantProblem(t, patch(t, e, tok, tk.Key, newKey(), "", `{"status":"resolved"}`), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "status", "allowed moves from closed: open")
		})
	})
}

func TestComments(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		tk := createTicket(t, e, "acme", "Printer on fire")
		post := func(key, body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/" + tk.Key + "/comments", token: tok, key: key, body: body})
		}
		key := newKey()
		first := post(key, `{"body":"  Replaced the fuser. "}`)
		c := decode[contract.Comment](t, first, http.StatusCreated)
		if c.Body != "Replaced the fuser." || c.TicketID != tk.ID || first.header.Get("Location") != "/api/v1/tickets/"+tk.ID+"/comments" {
			t.Errorf("comment = %+v (Location %q)", c, first.header.Get("Location"))
		}
		again := post(key, `{"body":"Replaced the fuser."}`)
		if got := decode[contract.Comment](t, again, http.StatusOK); got.ID != c.ID || again.header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("replay = %+v (replayed %q), want comment %s replayed", got, again.header.Get("Idempotent-Replayed"), c.ID)
		}
		wantProblem(t, post(key, `{"body":"Something else"}`), http.StatusUnprocessableEntity, "idempotency_conflict")
		wantProblem(t, post(newKey(), `{"body":"   "}`), http.StatusBadRequest, "invalid_input")
		decode[contract.Comment](t, post(newKey(), `{"body":"Second note."}`), http.StatusCreated)

		page := decode[struct {
			Comments   []contract.Comment `json:"comments"`
			NextCursor string             `json:"next_cursor"`
		}](t, do(t, e, req{path: "/api/v1/tickets/" + tk.ID + "/comments?limit=1", token: tok}), http.StatusOK)
		if len(page.Comments) != 1 || page.Comments[0].ID != c.ID || page.NextCursor == "" {
			t.Errorf("first page = %+v, want the first comment and a cursor", page)
		}
		if got := do(t, e, req{path: "/api/v1/tickets/" + tk.Key + "/comments", token: token(t, "globex", authn.ScopeRead)}); got.status != http.StatusNotFound {
			t.Errorf("another tenant's comments = %d, want 404", got.status)
		}
	})
}

func TestEventsAreOldestFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t))
	tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	tk := createTicket(t, e, "acme", "Printer on fire")
	decode[ticket](t, patch(t, e, tok, tk.Key, newKey(), "", `{"priority":"urgent"}`), http.StatusOK)
	decode[contract.Comment](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/" + tk.Key + "/comments", token: tok,
		key: newKey(), body: `{"body":"On it."}`}), http.StatusCreated)

	type eventPage struct {
		Events     []contract.Event `json:"events"`
		NextCursor string           `json:"next_cursor"`
	}
	var kinds []string
	path := "/api/v1/tickets/" + tk.Key + "/events?limit=2"
	for range 3 {
		page := decode[eventPage](t, do(t, e, req{path: path, token: tok}), http.StatusOK)
		for _, ev := range page.Events {
			kinds = append(kinds, ev.Kind)
			if ev.Kind == "updated" && (ev.Version != 2 || ev.Changes["priority"].From != "high" || ev.Changes["priority"].To != "urgent") {
				t.Errorf("updated event = %+v, want version 2 with priority high → urgent", ev)
			}
		}
		if page.NextCursor == "" {
			break
		}
		path = "/api/v1/tickets/" + tk.Key + "/events?limit=2&cursor=" + url.QueryEscape(page.NextCursor)
	}
	if strings.Join(kinds, ",") != "created,updated,commented" {
		t.Errorf("events = %v, want created, updated, commented", kinds)
	}
}

func TestListTicketsFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t))
	tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	fire := createTicket(t, e, "acme", "Printer on fire")
	createTicket(t, e, "acme", "Scanner jams")
	decode[ticket](t, patch(t, e, tok, fire.Key, newKey(), "", `{"assignee":"operator@acme","add_labels":["facilities"]}`), http.StatusOK)

	for _, q := range []string{"query=FIRE+printer", "assignee=me", "label=Facilities", "priority=high&query=printer&label=office"} {
		list := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?" + q, token: tok}), http.StatusOK)
		if len(list.Tickets) != 1 || list.Tickets[0].ID != fire.ID {
			t.Errorf("?%s found %+v, want only %s", q, list.Tickets, fire.Key)
		}
	}
	p := wantProblem(t, do(t, e, req{path: "/api/v1/tickets?priority=whenever", token: tok}), http.StatusBadRequest, "invalid_input")
	wantFieldError(t, p, "priority", "low, normal, high, urgent")

	// The list controls (docs/contract.md#lists-and-the-context-budget), as MCP takes them: several statuses,
	// assignee=none, updated_since, sort, and detail=summary without the
	// descriptions (full tickets by default).
	decode[ticket](t, patch(t, e, tok, "SUP-2", newKey(), "", `{"status":"closed"}`), http.StatusOK)
	since := url.QueryEscape(fire.CreatedAt)
	for q, want := range map[string][]string{
		"status=open,closed": {"SUP-2", "SUP-1"},
		"status=closed":      {"SUP-2"},
		"assignee=none":      {"SUP-2"},
		"sort=updated_desc&updated_since=" + since:   {"SUP-2", "SUP-1"},
		"sort=priority_desc&status=open,in_progress": {"SUP-1"},
	} {
		list := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?" + q, token: tok}), http.StatusOK)
		var keys []string
		for _, tk := range list.Tickets {
			keys = append(keys, tk.Key)
			if tk.Reporter == "" || tk.CreatedAt == "" {
				t.Errorf("?%s lists %s as %+v, want a full ticket by default", q, tk.Key, tk)
			}
		}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Errorf("?%s found %v, want %v", q, keys, want)
		}
	}
	summaries := decode[struct {
		Tickets []map[string]any `json:"tickets"`
	}](t, do(t, e, req{path: "/api/v1/tickets?detail=summary", token: tok}), http.StatusOK)
	if _, has := summaries.Tickets[0]["description"]; len(summaries.Tickets) != 2 || has || summaries.Tickets[0]["key"] != "SUP-2" {
		t.Errorf("detail=summary listed %v, want two tickets without descriptions", summaries.Tickets)
	}
	for q, field := range map[string]string{"updated_since=yesterday": "updated_since", "sort=oldest": "sort", "detail=all": "detail", "status=open,done": "status"} {
		wantFieldError(t, wantProblem(t, do(t, e, req{path: "/api/v1/tickets?" + q, token: tok}), http.StatusBadRequest, "invalid_input"), field, "")
	}
}

// TestListTicketsDescriptionsFollowDetail checks that a whole list carries
// each ticket's description and only a summary list leaves it unread
// (tickets.ListTicketsParams.WithoutDescriptions).
func TestListTicketsDescriptionsFollowDetail(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t))
	tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: newKey(),
		body: `{"project_id":"support","title":"Printer on fire","description":"Smoke from tray 2"}`}), http.StatusCreated)
	for _, q := range []string{"", "?detail=full"} {
		list := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets" + q, token: tok}), http.StatusOK)
		if len(list.Tickets) != 1 || list.Tickets[0].Description != "Smoke from tray 2" {
			t.Errorf("/api/v1/tickets%s listed %+v, want the ticket with its description", q, list.Tickets)
		}
	}
	summaries := decode[struct {
		Tickets []map[string]any `json:"tickets"`
	}](t, do(t, e, req{path: "/api/v1/tickets?detail=summary", token: tok}), http.StatusOK)
	if _, has := summaries.Tickets[0]["description"]; len(summaries.Tickets) != 1 || has {
		t.Errorf("detail=summary listed %v, want one ticket without a description", summaries.Tickets)
	}
}
