package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestBulkUpdateTickets(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		a, b := createTicket(t, e, "acme", "Printer on fire"), createTicket(t, e, "acme", "Scanner on fire")
		bulk := func(key, body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/bulk", token: tok, key: key, body: body})
		}
		key := newKey()
		body := fmt.Sprintf(`{"ids":[%q,%q],"status":"in_progress","add_labels":["triaged"]}`, a.Key, strings.ToLower(b.Key))
		first := decode[contract.BulkResult](t, bulk(key, body), http.StatusOK)
		if len(first.Tickets) != 2 || first.Tickets[0].Key != a.Key || first.Tickets[1].Version != 2 ||
			first.Tickets[1].Changes["status"].To != "in_progress" {
			t.Fatalf("bulk = %+v; want both tickets at v2 in_progress, in the order named", first)
		}
		patch(t, e, tok, a.Key, newKey(), "", `{"priority":"low"}`) // a moves on to v3
		again := bulk(key, body)
		replay := decode[contract.BulkResult](t, again, http.StatusOK)
		if again.header.Get("Idempotent-Replayed") != "true" || replay.Tickets[0].Version != 2 || replay.Tickets[0].Changes["status"].To != "in_progress" {
			t.Errorf("replay = %+v (replayed %q); want the recorded v2 and its changes", replay, again.header.Get("Idempotent-Replayed"))
		}
		wantProblem(t, bulk(key, fmt.Sprintf(`{"ids":[%q],"status":"in_progress"}`, a.Key)), http.StatusUnprocessableEntity, "idempotency_conflict")
		stale := fmt.Sprintf(`{"ids":[%q,%q],"if_versions":{%q:2},"status":"resolved"}`, a.Key, b.Key, a.Key)
		wantProblem(t, bulk(newKey(), stale), http.StatusConflict, "version_conflict")
		if got := decode[ticket](t, do(t, e, req{path: "/api/v1/tickets/" + b.Key, token: tok}), http.StatusOK); got.Status != "in_progress" {
			t.Errorf("%s after the rejected bulk is %s; want it untouched", b.Key, got.Status)
		}
		p := wantProblem(t, bulk(newKey(), `{"ids":[],"status":"closed"}`), http.StatusBadRequest, "invalid_input")
		wantFieldError(t, p, "ids", "")
		wantProblem(t, bulk("", body), http.StatusBadRequest, "invalid_input")
	})
}
