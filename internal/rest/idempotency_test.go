package rest_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		write := token(t, tenantA, authn.ScopeWrite)
		post := func(key, body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, body: body})
		}

		t.Run("ReplayAnswers200WithTheSameTicket", func(t *testing.T) {
			key := newKey()
			first := decode[ticket](t, post(key, ticketBody("Replay me")), http.StatusCreated)
			// The same intent, spelt differently: normalisation makes it the same input.
			r := post(key, `{"labels":["office","HARDWARE"],"title":" Replay me","priority":"high","project_id":"support"}`)
			again := decode[ticket](t, r, http.StatusOK)
			if r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("Idempotent-Replayed = %q, want true", r.header.Get("Idempotent-Replayed"))
			}
			if !equalTicket(again, first) {
				t.Errorf("replay = %+v, want %+v", again, first)
			}
			if n := count(t, d, "tickets", tenantA); n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
		t.Run("KeyReusedWithOtherInputIs422AndWritesNothing", func(t *testing.T) {
			key := newKey()
			decode[ticket](t, post(key, ticketBody("Original")), http.StatusCreated)
			before := count(t, d, "tickets", tenantA)
			p := wantProblem(t, post(key, ticketBody("Something else")), http.StatusUnprocessableEntity, "idempotency_conflict")
			if p.OperationID != key || p.Retryable {
				t.Errorf("problem = %+v, want operation_id %s and not retryable", p, key)
			}
			if n := count(t, d, "tickets", tenantA); n != before {
				t.Errorf("%d tickets after the conflict, want %d", n, before)
			}
		})
		t.Run("MissingKeyIs400", func(t *testing.T) {
			before := count(t, d, "tickets", tenantA)
			p := wantProblem(t, post("", ticketBody("No key")), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "Idempotency-Key", "required")
			if n := count(t, d, "tickets", tenantA); n != before {
				t.Errorf("%d tickets, want %d", n, before)
			}
		})
		t.Run("MalformedKeyIs400", func(t *testing.T) {
			before := count(t, d, "tickets", tenantA)
			for name, key := range map[string]string{
				"Nil":           "00000000-0000-0000-0000-000000000000",
				"Version1":      "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
				"Garbage":       "retry-me-please",
				"Braces":        "{0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c}",
				"URN":           "urn:uuid:0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c",
				"UnclosedQuote": `"0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c`,
				"Parameters":    `"0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c";a=1`,
				"QuotedGarbage": `"abc"`,
			} {
				r := post(key, ticketBody("Bad key "+name))
				p := wantProblem(t, r, http.StatusBadRequest, "invalid_input")
				wantFieldError(t, p, "Idempotency-Key", "")
			}
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, body: ticketBody("Two keys"),
				headers: http.Header{"Idempotency-Key": {newKey(), newKey()}}})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "Idempotency-Key", "once")
			if n := count(t, d, "tickets", tenantA); n != before {
				t.Errorf("%d tickets, want %d", n, before)
			}
		})
		t.Run("QuotedStructuredFieldKeyIsTheSameKey", func(t *testing.T) {
			key := newKey()
			first := decode[ticket](t, post(`"`+key+`"`, ticketBody("Quoted")), http.StatusCreated)
			r := post(strings.ToUpper(key), ticketBody("Quoted"))
			if got := decode[ticket](t, r, http.StatusOK); got.ID != first.ID || r.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("bare upper-case key answered %+v, want a replay of %s", got, first.ID)
			}
			op := decode[operation](t, do(t, e, req{path: "/api/v1/operations/" + key, token: token(t, tenantA, authn.ScopeRead)}), http.StatusOK)
			if op.TicketID != first.ID {
				t.Errorf("operation = %+v, want ticket %s", op, first.ID)
			}
			// Answers echo the stored, lower-case key, never the caller's spelling.
			p := wantProblem(t, post(strings.ToUpper(key), ticketBody("Other")), http.StatusUnprocessableEntity, "idempotency_conflict")
			if p.OperationID != key {
				t.Errorf("conflict names operation_id %q, want %q", p.OperationID, key)
			}
			p = wantProblem(t, do(t, e, req{path: "/api/v1/operations/%3Cscript%3E", token: token(t, tenantA, authn.ScopeRead)}),
				http.StatusBadRequest, "invalid_input")
			if p.OperationID != "" {
				t.Errorf("a malformed path ID was echoed as %q", p.OperationID)
			}
		})
		t.Run("InvalidInputLeavesTheKeyUsable", func(t *testing.T) {
			key := newKey()
			p := wantProblem(t, post(key, `{"project_id":"support","title":"   ","labels":[""]}`), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "title", "")
			if p.OperationID != key {
				t.Errorf("operation_id = %q, want %q", p.OperationID, key)
			}
			p = wantProblem(t, post(key, `{"project_id":"nope","title":"Unknown project"}`), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "project_id", "support")
			decode[ticket](t, post(key, ticketBody("Fixed")), http.StatusCreated)
		})
	})
}

func TestConcurrentSameKey(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		write := token(t, tenantA, authn.ScopeWrite)
		key := newKey()
		const callers = 24

		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
			ids      = map[string]bool{}
			start    = make(chan struct{})
		)
		// The callers only collect answers: checks that may stop the test
		// run here, on the test's goroutine, once they are done.
		var (
			finals   []resp
			retries  []resp
			failures []error
		)
		for range callers {
			wg.Go(func() {
				<-start
				// A 409 means another caller holds the key; the contract is to
				// retry the same request, which must then replay.
				for attempt := 0; ; attempt++ {
					r, err := tryDo(e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, body: ticketBody("Once")})
					mu.Lock()
					switch {
					case err != nil:
						failures = append(failures, err)
					case r.status == http.StatusConflict && attempt < 50:
						retries = append(retries, r)
					default:
						finals = append(finals, r)
					}
					mu.Unlock()
					if err == nil && r.status == http.StatusConflict && attempt < 50 {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					return
				}
			})
		}
		close(start)
		wg.Wait()

		for _, err := range failures {
			t.Fatal(err)
		}
		for _, r := range retries {
			wantProblem(t, r, http.StatusConflict, "operation_in_progress")
			if r.header.Get("Retry-After") == "" {
				t.Error("409 without Retry-After")
			}
		}
		for _, r := range finals {
			statuses[r.status]++
			if r.status == http.StatusOK || r.status == http.StatusCreated {
				ids[decode[ticket](t, r, r.status).ID] = true
			}
		}
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusOK] != callers-1 {
			t.Errorf("statuses = %v, want one 201 and %d 200s", statuses, callers-1)
		}
		if len(ids) != 1 {
			t.Errorf("answers name %d tickets, want 1", len(ids))
		}
		if n := count(t, d, "tickets", tenantA); n != 1 {
			t.Errorf("%d tickets written, want 1", n)
		}
	})
}
