package rest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/approval"
)

// Approval is an approval as a decision on it answers (docs/approval.md).
type Approval struct {
	ApprovalID  string     `json:"approval_id"`
	Status      string     `json:"status" jsonschema:"pending, approved (until expires_at), declined, used (the write ran) or expired"`
	Action      string     `json:"action" jsonschema:"the write asked for: create_ticket, update_ticket or bulk_update_tickets"`
	OperationID string     `json:"operation_id"`
	Summary     string     `json:"summary" jsonschema:"what the write will change, in one sentence"`
	RequestedBy string     `json:"requested_by" jsonschema:"subject of the token that asked for the write"`
	DecidedBy   string     `json:"decided_by,omitempty" jsonschema:"subject of the person who decided"`
	DecidedVia  string     `json:"decided_via,omitempty" jsonschema:"form, url, console or rest"`
	DecidedAt   *time.Time `json:"decided_at,omitempty"`
	ExpiresAt   time.Time  `json:"expires_at" jsonschema:"until when a pending approval can be decided, or an approved one used"`
}

func toApproval(a approval.Approval) Approval {
	return Approval{
		ApprovalID: a.ID, Status: string(a.Status), Action: a.Action, OperationID: a.OperationID.String(),
		Summary: a.Proposal.Summary, RequestedBy: a.RequestedBy, DecidedBy: a.DecidedBy, DecidedVia: string(a.DecidedVia),
		DecidedAt: a.DecidedAt, ExpiresAt: a.ExpiresAt,
	}
}

// approveApproval is POST /api/v1/approvals/{approval_id}/approve
// (tickets:approve alone): a person says yes, and the requester's retry
// with the same operation ID then writes once.
func (a *api) approveApproval(w http.ResponseWriter, r *http.Request) { a.decideApproval(w, r, true) }

// declineApproval is POST /api/v1/approvals/{approval_id}/decline
// (tickets:approve alone).
func (a *api) declineApproval(w http.ResponseWriter, r *http.Request) { a.decideApproval(w, r, false) }

func (a *api) decideApproval(w http.ResponseWriter, r *http.Request, approve bool) {
	id := chi.URLParam(r, "approval_id")
	gate := a.svc.Approvals()
	if gate == nil {
		fail(w, r, fmt.Errorf("%w: approval is off on this server (TICKETD_APPROVAL=off)", approval.ErrNotFound), "")
		return
	}
	p := principal(r)
	d, err := gate.Decide(r.Context(), p.Tenant, p.Subject, id, approve, approval.ViaREST)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	writeJSON(w, http.StatusOK, toApproval(d))
}
