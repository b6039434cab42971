package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/wire"
)

// Resolution is the body of POST /api/v1/operations/{operation_id}/resolve:
// an operator's finding about an unknown or pending operation.
type Resolution struct {
	Outcome    string `json:"outcome" jsonschema:"succeeded (it happened) or not_created (it did not)"`
	ExternalID string `json:"external_id,omitempty" jsonschema:"with succeeded: the tracker issue it made, e.g. owner/name#12"`
	Reason     string `json:"reason" jsonschema:"why you believe it; kept in the operation's history with who and when"`
}

// operationKey reads the path's operation ID and the optional action query
// parameter (the ID's newest action when absent, as GET resolves it), and
// the canonical ID to echo.
func operationKey(r *http.Request) (raw, action, echo string) {
	raw = chi.URLParam(r, "operation_id")
	if id, err := operations.ParseID(raw); err == nil {
		echo = id.String()
	}
	return raw, r.URL.Query().Get("action"), echo
}

// reconcileOperation is POST /api/v1/operations/{operation_id}/reconcile
// (tickets:admin): look at the tracker now.
func (a *api) reconcileOperation(w http.ResponseWriter, r *http.Request) {
	raw, action, echo := operationKey(r)
	p := principal(r)
	st, err := a.svc.ReconcileOperation(r.Context(), p.Tenant, p.Subject, raw, action)
	if err != nil {
		fail(w, r, err, echo)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromOperation(st))
}

// resolveOperation is POST /api/v1/operations/{operation_id}/resolve
// (tickets:admin): record what the operator found.
func (a *api) resolveOperation(w http.ResponseWriter, r *http.Request) {
	raw, action, echo := operationKey(r)
	var body Resolution
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, echo)
		return
	}
	p := principal(r)
	st, err := a.svc.ResolveOperation(r.Context(), p.Tenant, p.Subject, raw, action,
		tickets.Resolution{Outcome: body.Outcome, ExternalID: body.ExternalID, Reason: body.Reason})
	if err != nil {
		fail(w, r, err, echo)
		return
	}
	writeJSON(w, http.StatusOK, wire.FromOperation(st))
}
