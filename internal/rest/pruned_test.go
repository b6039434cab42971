package rest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
)

// TestRetryAfterPruneIsOperationExpired retries a create and a comment over
// HTTP after their operation records were deleted without tombstones, as a
// prune before migration 00012 left them: each still answers 409
// operation_expired (the write's own row keeps its operation ID), saying the
// key was applied long ago (not that its input differs), and nothing is
// written a second time.
func TestRetryAfterPruneIsOperationExpired(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
		createKey, commentKey := newKey(), newKey()
		body := `{"project_id":"support","title":"Printer on fire"}`
		create := func() resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: createKey, body: body})
		}
		tk := decode[struct {
			Key string `json:"key"`
		}](t, create(), http.StatusCreated)
		comment := func() resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/" + tk.Key + "/comments", token: tok, key: commentKey, body: `{"body":"On it."}`})
		}
		if r := comment(); r.status != http.StatusCreated {
			t.Fatalf("comment = %d", r.status)
		}
		if err := d.Gorm.Exec("DELETE FROM operations").Error; err != nil {
			t.Fatal(err)
		}
		for name, r := range map[string]resp{"create": create(), "comment": comment()} {
			p := wantProblem(t, r, http.StatusConflict, "operation_expired")
			if strings.Contains(p.Detail, "different input") {
				t.Errorf("%s retry after prune: detail %q claims other input", name, p.Detail)
			}
		}
		if n := dbtest.CountRows(t, d, "tickets", "acme"); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
		if n := dbtest.CountRows(t, d, "comments", "acme"); n != 1 {
			t.Errorf("%d comments, want 1", n)
		}
	})
}

// prune runs ticketd prune's ledger step with a cutoff past every record
// written so far, as `ticketd prune --older-than` a moment after the writes.
func prune(tb testing.TB, d *db.DB) operations.PruneResult {
	tb.Helper()
	res, err := operations.NewLedger(d.Gorm, operations.Options{}).Prune(context.Background(), time.Now().Add(time.Minute), operations.DefaultPruneBatch, false)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// TestPrunedWriteIsExpired is issue 28's reproduction over HTTP: after
// ticketd prune, GET /api/v1/operations/{id} of a create, an update and a
// comment that ran answers 200 with status expired and a next step that
// says the write ran, never 404 "nothing ran, safe to use"; a retry of the
// create, with its own input or another, answers 409 operation_expired and
// writes nothing; another tenant's lookup of the same ID is 404 not_found,
// exactly as an unused ID is.
func TestPrunedWriteIsExpired(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		tok := token(t, tenantA, authn.ScopeRead, authn.ScopeWrite)
		createKey, updateKey, commentKey := newKey(), newKey(), newKey()
		create := func(body string) resp {
			return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: createKey, body: body})
		}
		tk := decode[ticket](t, create(ticketBody("Printer on fire")), http.StatusCreated)
		if r := do(t, e, req{method: http.MethodPatch, path: "/api/v1/tickets/" + tk.Key, token: tok, key: updateKey, body: `{"status":"in_progress"}`}); r.status != http.StatusOK {
			t.Fatalf("update = %d %s", r.status, r.body)
		}
		if r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets/" + tk.Key + "/comments", token: tok, key: commentKey, body: `{"body":"On it."}`}); r.status != http.StatusCreated {
			t.Fatalf("comment = %d %s", r.status, r.body)
		}
		if res := prune(t, d); res.Deleted != 3 {
			t.Fatalf("prune deleted %d records, want 3", res.Deleted)
		}

		for action, key := range map[string]string{"create_ticket": createKey, "update_ticket": updateKey, "add_comment": commentKey} {
			r := do(t, e, req{path: "/api/v1/operations/" + key, token: tok})
			op := decode[struct {
				operation
				CreatedAt *time.Time `json:"created_at"`
				UpdatedAt *time.Time `json:"updated_at"`
			}](t, r, http.StatusOK)
			if op.Status != "expired" || op.Action != action || op.OperationID != key || op.UpdatedAt == nil || op.CreatedAt != nil {
				t.Errorf("%s after prune = %s, want status expired with its action, updated_at the time of pruning and no created_at", action, r.body)
			}
			if !strings.Contains(op.NextStep, "ran") || strings.Contains(op.NextStep, "safe") || strings.Contains(op.NextStep, "Nothing ran") {
				t.Errorf("%s after prune: next_step %q must say the write ran, never invite a fresh key", action, op.NextStep)
			}
			other := wantProblem(t, do(t, e, req{path: "/api/v1/operations/" + key, token: token(t, tenantB, authn.ScopeRead)}), http.StatusNotFound, "not_found")
			unused := wantProblem(t, do(t, e, req{path: "/api/v1/operations/" + newKey(), token: token(t, tenantB, authn.ScopeRead)}), http.StatusNotFound, "not_found")
			if other.Detail != unused.Detail {
				t.Errorf("another tenant's lookup of a pruned ID says %q, an unused ID %q: they must not differ", other.Detail, unused.Detail)
			}
		}
		for input, body := range map[string]string{"the same as": ticketBody("Printer on fire"), "differs from": ticketBody("Another printer")} {
			p := wantProblem(t, create(body), http.StatusConflict, "operation_expired")
			if !strings.Contains(p.Detail, input) {
				t.Errorf("retry whose input %s the pruned write's: detail %q does not say so", input, p.Detail)
			}
		}
		if n := count(t, d, "tickets", tenantA); n != 1 {
			t.Errorf("%d tickets after retrying a pruned create, want 1", n)
		}
		if n := count(t, d, "operations", tenantA); n != 0 {
			t.Errorf("%d operation records after retrying a pruned create, want 0", n)
		}
	})
}
