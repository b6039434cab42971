package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Resolution is the body of POST /api/v1/operations/{operation_id}/resolve:
// an operator's finding about an unknown or pending operation.
type Resolution struct {
	Outcome    string `json:"outcome" jsonschema:"succeeded (it happened) or not_created (it did not)"`
	ExternalID string `json:"external_id,omitempty" jsonschema:"with succeeded: the issue it made or edited (owner/name#12), or the comment it made (owner/name#12/comments/345)"`
	Reason     string `json:"reason" jsonschema:"why you believe it; kept in the operation's history with who and when"`
}

// pathOperationID parses the path's operation ID. Only an ID that parses is
// echoed, in its canonical form: the path is the caller's text and has no
// business in a response verbatim.
func pathOperationID(r *http.Request) (operations.ID, error) {
	id, err := operations.ParseID(chi.URLParam(r, "operation_id"))
	if err != nil {
		return operations.ID{}, invalid("operation_id", err.Error())
	}
	return id, nil
}

// reconcileOperation is POST /api/v1/operations/{operation_id}/reconcile
// (tickets:admin): look at the tracker now. The optional action query
// parameter picks the action the ID was used for (the ID's newest when
// absent, as GET resolves it).
func (a *api) reconcileOperation(w http.ResponseWriter, r *http.Request) {
	id, err := pathOperationID(r)
	if err != nil {
		fail(w, r, err, "")
		return
	}
	st, err := a.svc.ReconcileOperation(r.Context(), caller(r), id, r.URL.Query().Get("action"))
	if err != nil {
		fail(w, r, err, id.String())
		return
	}
	writeJSON(w, http.StatusOK, contract.FromOperation(st, operationNextStep))
}

// resolveOperation is POST /api/v1/operations/{operation_id}/resolve
// (tickets:admin): record what the operator found.
func (a *api) resolveOperation(w http.ResponseWriter, r *http.Request) {
	id, idErr := pathOperationID(r)
	echo := ""
	if idErr == nil {
		echo = id.String()
	}
	var body Resolution
	if err := decodeJSON(w, r, &body); err != nil {
		fail(w, r, err, echo)
		return
	}
	if idErr != nil {
		fail(w, r, idErr, "")
		return
	}
	st, err := a.svc.ResolveOperation(r.Context(), caller(r), id, r.URL.Query().Get("action"),
		tickets.Resolution{Outcome: body.Outcome, ExternalID: body.ExternalID, Reason: body.Reason})
	if err != nil {
		fail(w, r, err, echo)
		return
	}
	writeJSON(w, http.StatusOK, contract.FromOperation(st, operationNextStep))
}
