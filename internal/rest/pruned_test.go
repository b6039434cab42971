package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestRetryAfterPruneIsOperationExpired retries a create and a comment over
// HTTP after their operation records were pruned: each answers 409
// operation_expired, saying the key was applied long ago (not that its input
// differs), and nothing is written a second time.
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
