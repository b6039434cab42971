package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestApprovalRequiredIs428: REST cannot ask anyone, so a write that needs
// a person's yes is refused with 428, the approval's URL and a Retry-After;
// once the person approved, the same request with the same key writes once;
// a decline is 403 approval_declined.
func TestApprovalRequiredIs428(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	gate := approval.New(d.Gorm, approval.Options{Policy: approval.Policy{Enabled: true, BulkThreshold: 10},
		PageURL: func(id string) string { return publicURL + "/console/approvals/" + id }})
	svc := tickets.NewService(d.Gorm, tickets.Options{Approvals: gate})
	if _, err := svc.CreateProject(context.Background(), tenantA, tickets.Project{ID: "support", Key: "SUP", Name: "Support"}); err != nil {
		t.Fatal(err)
	}
	e := serveEnv(t, d, svc, nil)
	tok := token(t, tenantA, authn.ScopeRead, authn.ScopeWrite)
	key, body := newKey(), `{"project_id":"support","title":"Checkout is down","priority":"urgent"}`
	post := func() resp {
		return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: key, body: body})
	}
	first := post()
	wantProblem(t, first, http.StatusPreconditionRequired, "approval_required")
	var p struct {
		ApprovalURL, ApprovalID, ExpiresAt, OperationID string
		Retryable                                       bool
	}
	if err := json.Unmarshal(first.body, &struct {
		ApprovalURL *string `json:"approval_url"`
		ApprovalID  *string `json:"approval_id"`
		ExpiresAt   *string `json:"expires_at"`
		OperationID *string `json:"operation_id"`
		Retryable   *bool   `json:"retryable"`
	}{&p.ApprovalURL, &p.ApprovalID, &p.ExpiresAt, &p.OperationID, &p.Retryable}); err != nil {
		t.Fatal(err)
	}
	if p.ApprovalURL != publicURL+"/console/approvals/"+p.ApprovalID || p.ExpiresAt == "" || p.OperationID != key || !p.Retryable ||
		first.header.Get("Retry-After") == "" {
		t.Fatalf("428 = %+v (Retry-After %q); want the approval's URL, its expiry, the key, retryable", p, first.header.Get("Retry-After"))
	}
	if n := dbtest.CountRows(t, d, "tickets", tenantA); n != 0 {
		t.Fatalf("%d tickets before approval", n)
	}
	if _, err := gate.Decide(context.Background(), tenantA, "operator@"+tenantA, p.ApprovalID, true); err != nil {
		t.Fatal(err)
	}
	decode[ticket](t, post(), http.StatusCreated)
	if again := post(); again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry after the write = %d (replayed %q); want 200 replayed", again.status, again.header.Get("Idempotent-Replayed"))
	}

	// Making an existing ticket urgent asks too; declined, it writes nothing.
	tk := createTicket(t, e, tenantA, "Printer on fire")
	patchKey := newKey()
	asked := patch(t, e, tok, tk.Key, patchKey, "", `{"priority":"urgent"}`)
	wantProblem(t, asked, http.StatusPreconditionRequired, "approval_required")
	var ap struct {
		ApprovalID string `json:"approval_id"`
	}
	if err := json.Unmarshal(asked.body, &ap); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Decide(context.Background(), tenantA, "operator@"+tenantA, ap.ApprovalID, false); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, patch(t, e, tok, tk.Key, patchKey, "", `{"priority":"urgent"}`), http.StatusForbidden, "approval_declined")
	if got := decode[ticket](t, do(t, e, req{path: "/api/v1/tickets/" + tk.Key, token: tok}), http.StatusOK); got.Priority == "urgent" {
		t.Error("a declined update was written")
	}
}
