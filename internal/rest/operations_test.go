package rest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

func TestOperations(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		read := token(t, tenantA, authn.ScopeRead)
		created := createTicket(t, e, tenantA, "Done")

		// An operation whose COMMIT reply was lost is recorded as unknown by
		// reconciliation; no request can produce one, so the row is written
		// directly, as that process would.
		unknownKey := newKey()
		now := time.Now().UTC()
		if err := d.Gorm.Exec(`INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, created_at, updated_at)
			VALUES (?, 'create_ticket', ?, ?, 'unknown', ?, ?)`, tenantA, unknownKey, strings.Repeat("a", 64), now, now).Error; err != nil {
			t.Fatalf("insert unknown operation: %v", err)
		}

		t.Run("StatusFilterFindsUnknownOperations", func(t *testing.T) {
			got := decode[operationList](t, do(t, e, req{path: "/api/v1/operations?status=unknown", token: read}), http.StatusOK)
			if len(got.Operations) != 1 || got.Operations[0].OperationID != unknownKey || got.Operations[0].Status != "unknown" ||
				got.Operations[0].NextStep == "" || got.NextCursor != "" {
				t.Errorf("unknown operations = %+v", got)
			}
		})
		t.Run("UnknownOperationByID", func(t *testing.T) {
			op := decode[operation](t, do(t, e, req{path: "/api/v1/operations/" + unknownKey, token: read}), http.StatusOK)
			if op.Status != "unknown" || op.TicketID != "" || op.Ticket != nil {
				t.Errorf("operation = %+v", op)
			}
		})
		t.Run("ListWithoutFilterHasBoth", func(t *testing.T) {
			got := decode[operationList](t, do(t, e, req{path: "/api/v1/operations", token: read}), http.StatusOK)
			var statuses []string
			for _, op := range got.Operations {
				statuses = append(statuses, op.Status)
				if op.Status == "succeeded" && op.TicketID != created.ID {
					t.Errorf("succeeded operation = %+v, want ticket %s", op, created.ID)
				}
			}
			slices.Sort(statuses)
			if !slices.Equal(statuses, []string{"succeeded", "unknown"}) {
				t.Errorf("statuses = %v", statuses)
			}
		})
		t.Run("EmptyListIsAnArray", func(t *testing.T) {
			r := do(t, e, req{path: "/api/v1/operations?status=pending", token: read})
			if got := decode[map[string]any](t, r, http.StatusOK); got["operations"] == nil {
				t.Errorf("body = %s, want operations: []", r.body)
			}
		})
		t.Run("UnusedIDIs404WithTheID", func(t *testing.T) {
			unused := newKey()
			p := wantProblem(t, do(t, e, req{path: "/api/v1/operations/" + unused, token: read}), http.StatusNotFound, "not_found")
			if p.OperationID != unused {
				t.Errorf("operation_id = %q, want %q", p.OperationID, unused)
			}
		})
		t.Run("MalformedIDIs400", func(t *testing.T) {
			for _, id := range []string{"nope", "00000000-0000-0000-0000-000000000000"} {
				p := wantProblem(t, do(t, e, req{path: "/api/v1/operations/" + id, token: read}), http.StatusBadRequest, "invalid_input")
				wantFieldError(t, p, "operation_id", "")
			}
		})
		t.Run("BadStatusIs400", func(t *testing.T) {
			p := wantProblem(t, do(t, e, req{path: "/api/v1/operations?status=open", token: read}), http.StatusBadRequest, "invalid_input")
			wantFieldError(t, p, "status", "unknown")
		})
	})
}
