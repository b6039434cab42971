package rest_test

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestPagination(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		read := token(t, tenantA, authn.ScopeRead)
		const n = 7
		var wantTickets, wantOps []string // newest first
		for i := range n {
			// Version 7 keys sort in creation order, so operations created
			// within one clock tick still list newest first.
			key := uuid.Must(uuid.NewV7()).String()
			tk := decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets",
				token: token(t, tenantA, authn.ScopeWrite), key: key, body: ticketBody("Ticket " + strconv.Itoa(i))}), http.StatusCreated)
			wantTickets = append([]string{tk.ID}, wantTickets...)
			wantOps = append([]string{key}, wantOps...)
		}
		createTicket(t, e, tenantB, "Other tenant's")

		t.Run("TicketsPageWithoutDuplicatesOrGaps", func(t *testing.T) {
			got, pages := collect(t, e, read, "/api/v1/tickets?limit=3", func(r resp) ([]string, string) {
				l := decode[ticketList](t, r, http.StatusOK)
				return ticketIDs(l.Tickets), l.NextCursor
			})
			if !slices.Equal(got, wantTickets) || pages != 3 {
				t.Errorf("paged %v in %d pages, want %v in 3", got, pages, wantTickets)
			}
		})
		t.Run("OperationsPageWithoutDuplicatesOrGaps", func(t *testing.T) {
			got, pages := collect(t, e, read, "/api/v1/operations?status=succeeded&limit=2", func(r resp) ([]string, string) {
				l := decode[operationList](t, r, http.StatusOK)
				ids := make([]string, len(l.Operations))
				for i, op := range l.Operations {
					ids[i] = op.OperationID
					if op.Status != "succeeded" || op.TicketID == "" {
						t.Errorf("listed operation %+v", op)
					}
				}
				return ids, l.NextCursor
			})
			if !slices.Equal(got, wantOps) || pages != 4 {
				t.Errorf("paged %v in %d pages, want %v in 4", got, pages, wantOps)
			}
		})
		t.Run("CursorIsBoundToItsFilters", func(t *testing.T) {
			first := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?limit=2", token: read}), http.StatusOK)
			r := do(t, e, req{path: "/api/v1/tickets?limit=2&status=open&cursor=" + url.QueryEscape(first.NextCursor), token: read})
			wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "cursor", "")
		})
		t.Run("ForgedCursorsAre400", func(t *testing.T) {
			tk := decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets?limit=2", token: read}), http.StatusOK)
			op := decode[operationList](t, do(t, e, req{path: "/api/v1/operations?limit=2", token: read}), http.StatusOK)
			for _, c := range []struct{ path, cursor string }{
				{"/api/v1/tickets", "forged"},
				{"/api/v1/tickets", tamper(tk.NextCursor)},
				{"/api/v1/tickets", op.NextCursor},
				{"/api/v1/operations", "forged"},
				{"/api/v1/operations", tamper(op.NextCursor)},
				{"/api/v1/operations", tk.NextCursor},
			} {
				r := do(t, e, req{path: c.path + "?limit=2&cursor=" + url.QueryEscape(c.cursor), token: read})
				wantFieldError(t, wantProblem(t, r, http.StatusBadRequest, "invalid_input"), "cursor", "")
			}
		})
	})
}

// collect follows next_cursor from first to the last page and returns every
// ID in order and the number of pages.
func collect(tb testing.TB, e *env, tok, first string, page func(resp) ([]string, string)) ([]string, int) {
	tb.Helper()
	var all []string
	path, pages := first, 0
	for {
		ids, next := page(do(tb, e, req{path: path, token: tok}))
		all = append(all, ids...)
		pages++
		if next == "" || pages > 20 {
			return all, pages
		}
		path = first + "&cursor=" + url.QueryEscape(next)
	}
}

// tamper changes one character in the middle of a cursor.
func tamper(c string) string {
	b := []byte(c)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}
