package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// approvalServer serves a service whose urgent writes need approval under
// opts, with the project support in tenants A and B.
func approvalServer(t *testing.T, opts approval.Options) (*env, *approval.Gate) {
	t.Helper()
	d := dbtest.SQLite(t)
	opts.Policy = approval.Policy{Enabled: true, BulkThreshold: 10}
	opts.PageURL = func(id string) string { return publicURL + "/console/approvals/" + id }
	gate := approval.New(d.Gorm, opts)
	svc := tickets.NewService(d.Gorm, tickets.Options{Approvals: gate})
	for _, tenant := range []string{tenantA, tenantB} {
		if _, err := svc.CreateProject(context.Background(), tenant, tickets.Project{ID: "support", Key: "SUP", Name: "Support"}); err != nil {
			t.Fatal(err)
		}
	}
	return serveEnv(t, d, svc, nil), gate
}

// personToken mints a token for subject in tenant with scopes.
func personToken(t *testing.T, tenant, subject string, scopes ...string) string {
	t.Helper()
	return servertest.Mint(t, authn.TokenRequest{Issuer: issuer, Audience: audience, Tenant: tenant, Subject: subject, Scopes: scopes, TTL: time.Hour}, time.Now())
}

// approvalID reads approval_required's approval_id.
func approvalID(t *testing.T, r resp) string {
	t.Helper()
	wantProblem(t, r, http.StatusPreconditionRequired, "approval_required")
	var p struct {
		ApprovalID string `json:"approval_id"`
	}
	if err := json.Unmarshal(r.body, &p); err != nil || p.ApprovalID == "" {
		t.Fatalf("approval_required without approval_id (%v): %s", err, r.body)
	}
	return p.ApprovalID
}

func decideREST(t *testing.T, e *env, tok, id, verb string) resp {
	t.Helper()
	return do(t, e, req{method: http.MethodPost, path: "/api/v1/approvals/" + id + "/" + verb, token: tok})
}

// TestApprovalRequiredIs428: REST cannot ask anyone, so a write that needs
// a person's yes is refused with 428, the approval's URL and a Retry-After;
// the agent's own token cannot approve it, nor an operator's; a person's
// token with tickets:approve alone can, and the same request with the same
// key then writes once; a decline is 403 approval_declined.
func TestApprovalRequiredIs428(t *testing.T) {
	t.Parallel()
	e, _ := approvalServer(t, approval.Options{})
	agent := personToken(t, tenantA, "agent", authn.ScopeRead, authn.ScopeWrite)
	carol := personToken(t, tenantA, "carol", authn.ScopeApprove)
	key, body := newKey(), `{"project_id":"support","title":"Checkout is down","priority":"urgent"}`
	post := func() resp {
		return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: agent, key: key, body: body})
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
	// Neither the agent's token nor an operator's approves; another
	// tenant's approver does not even find it.
	for name, tok := range map[string]string{"agent": agent, "admin": admin(t, tenantA)} {
		if r := decideREST(t, e, tok, p.ApprovalID, "approve"); r.status != http.StatusForbidden {
			t.Errorf("%s approving = %d %s; want 403", name, r.status, r.body)
		} else {
			wantProblem(t, r, http.StatusForbidden, "forbidden")
		}
	}
	wantProblem(t, decideREST(t, e, personToken(t, tenantB, "carol", authn.ScopeApprove), p.ApprovalID, "approve"), http.StatusNotFound, "not_found")
	if n := dbtest.CountRows(t, e.d, "tickets", tenantA); n != 0 {
		t.Fatalf("%d tickets before approval", n)
	}
	wantProblem(t, post(), http.StatusPreconditionRequired, "approval_required")

	got := decode[rest.Approval](t, decideREST(t, e, carol, p.ApprovalID, "approve"), http.StatusOK)
	if got.Status != "approved" || got.DecidedBy != "carol" || got.DecidedVia != "rest" || got.RequestedBy != "agent" || got.OperationID != key {
		t.Errorf("approve = %+v; want approved by carol via rest, asked by agent for the key", got)
	}
	wantProblem(t, decideREST(t, e, carol, p.ApprovalID, "decline"), http.StatusConflict, "state_conflict")
	decode[ticket](t, post(), http.StatusCreated)
	if again := post(); again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the retry after the write = %d (replayed %q); want 200 replayed", again.status, again.header.Get("Idempotent-Replayed"))
	}
	if n := dbtest.CountRows(t, e.d, "tickets", tenantA); n != 1 {
		t.Errorf("%d tickets after approval and two retries, want 1", n)
	}

	// Making an existing ticket urgent asks too; declined, it writes nothing.
	tk := createTicket(t, e, tenantA, "Printer on fire")
	patchKey := newKey()
	id := approvalID(t, patch(t, e, agent, tk.Key, patchKey, "", `{"priority":"urgent"}`))
	decode[rest.Approval](t, decideREST(t, e, carol, id, "decline"), http.StatusOK)
	wantProblem(t, patch(t, e, agent, tk.Key, patchKey, "", `{"priority":"urgent"}`), http.StatusForbidden, "approval_declined")
	if got := decode[ticket](t, do(t, e, req{path: "/api/v1/tickets/" + tk.Key, token: agent}), http.StatusOK); got.Priority == "urgent" {
		t.Error("a declined update was written")
	}
}

// TestFourEyesOverREST: with four-eyes on, the requester's own subject,
// although it holds tickets:approve, cannot approve its write; a second
// person can.
func TestFourEyesOverREST(t *testing.T) {
	t.Parallel()
	e, _ := approvalServer(t, approval.Options{FourEyes: true})
	alice := personToken(t, tenantA, "alice", authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove)
	key, body := newKey(), `{"project_id":"support","title":"Checkout is down","priority":"urgent"}`
	post := func() resp {
		return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: alice, key: key, body: body})
	}
	id := approvalID(t, post())
	wantProblem(t, decideREST(t, e, alice, id, "approve"), http.StatusForbidden, "forbidden")
	wantProblem(t, post(), http.StatusPreconditionRequired, "approval_required")
	decode[rest.Approval](t, decideREST(t, e, personToken(t, tenantA, "bob", authn.ScopeApprove), id, "approve"), http.StatusOK)
	decode[ticket](t, post(), http.StatusCreated)
}

// TestExpiredApprovalOverREST moves the gate's clock: an approval nobody
// decided within TICKETD_APPROVAL_TTL cannot be approved any more, and one
// approved but not used within it no longer lets the write through; the
// retry is asked again.
func TestExpiredApprovalOverREST(t *testing.T) {
	t.Parallel()
	var clock atomic.Int64
	start := time.Now()
	clock.Store(start.UnixNano())
	ttl := 2 * time.Minute
	e, _ := approvalServer(t, approval.Options{TTL: ttl, Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	agent := personToken(t, tenantA, "agent", authn.ScopeRead, authn.ScopeWrite)
	carol := personToken(t, tenantA, "carol", authn.ScopeApprove)
	key, body := newKey(), `{"project_id":"support","title":"Checkout is down","priority":"urgent"}`
	post := func() resp {
		return do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: agent, key: key, body: body})
	}
	late := approvalID(t, post())
	clock.Store(start.Add(ttl + time.Second).UnixNano())
	wantProblem(t, decideREST(t, e, carol, late, "approve"), http.StatusConflict, "state_conflict")

	given := approvalID(t, post())
	if given == late {
		t.Fatal("the retry after the ask expired named the expired approval")
	}
	decode[rest.Approval](t, decideREST(t, e, carol, given, "approve"), http.StatusOK)
	clock.Store(start.Add(2*ttl + 2*time.Second).UnixNano())
	if again := approvalID(t, post()); again == given {
		t.Error("the retry after the approval expired was let through its approval")
	}
	if n := dbtest.CountRows(t, e.d, "tickets", tenantA); n != 0 {
		t.Errorf("%d tickets; an expired approval let a write through", n)
	}
}
