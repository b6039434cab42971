package rest_test

import (
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestCommitReplyLostIs503OutcomeUnknown loses the reply to the create's
// commit after PostgreSQL applied it (the create is one statement outside a
// transaction, whose reply is its commit's; the title is among its
// arguments): the client must hear "outcome unknown, retry with the same
// key", never a failure, and the retry must replay the one ticket.
func TestCommitReplyLostIs503OutcomeUnknown(t *testing.T) {
	t.Parallel()
	d, proxy := dbtest.PostgresViaProxy(t)
	e := newEnv(t, d)
	write := token(t, tenantA, authn.ScopeWrite)
	key := newKey()

	fired := proxy.DropReplyAfter("Lost reply", dbtest.PostgresStatementEnd)
	r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, body: ticketBody("Lost reply")})
	<-fired
	p := wantProblem(t, r, http.StatusServiceUnavailable, "outcome_unknown")
	if p.OperationID != key || !p.Retryable || r.header.Get("Retry-After") == "" || p.RequestID == "" ||
		p.RequestID != r.header.Get("X-Request-ID") {
		t.Errorf("problem = %+v, Retry-After %q, X-Request-ID %q; want the key, retryable, Retry-After and the request ID",
			p, r.header.Get("Retry-After"), r.header.Get("X-Request-ID"))
	}

	op := decode[operation](t, do(t, e, req{path: "/api/v1/operations/" + key, token: token(t, tenantA, authn.ScopeRead)}), http.StatusOK)
	retry := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: write, key: key, body: ticketBody("Lost reply")})
	got := decode[ticket](t, retry, http.StatusOK)
	if op.Status != "succeeded" || got.ID != op.TicketID || retry.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("operation %+v, retry %+v (replayed %q); want the retry to replay the committed ticket",
			op, got, retry.header.Get("Idempotent-Replayed"))
	}
	if n := count(t, d, "tickets", tenantA); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestStoreDownIs503Unavailable closes the database under the router: reads
// and writes answer 503 unavailable with Retry-After, and the driver's error
// stays in the log.
func TestStoreDownIs503Unavailable(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		tok := admin(t, tenantA)
		for _, rq := range []req{
			{path: "/api/v1/tickets", token: tok},
			{path: "/api/v1/projects", token: tok},
			{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: newKey(), body: ticketBody("Nowhere to go")},
		} {
			r := do(t, e, rq)
			p := wantProblem(t, r, http.StatusServiceUnavailable, "unavailable")
			if !p.Retryable || r.header.Get("Retry-After") == "" {
				t.Errorf("%s %s: problem %+v, Retry-After %q", rq.method, rq.path, p, r.header.Get("Retry-After"))
			}
		}
	})
}
