package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// problemTypeBase prefixes every problem type URI; the contract code follows.
const problemTypeBase = "https://ticketd.dev/problems/"

// problem is an RFC 9457 problem document with ticketd's extension members.
type problem struct {
	Type        string               `json:"type"`
	Title       string               `json:"title"`
	Status      int                  `json:"status"`
	Detail      string               `json:"detail"`
	Code        errcode.Code         `json:"code"`
	Retryable   bool                 `json:"retryable"`
	Errors      []tickets.FieldError `json:"errors,omitempty"`
	NextStep    string               `json:"next_step"`
	OperationID string               `json:"operation_id,omitempty"`
	RequestID   string               `json:"request_id,omitempty"`
	// With approval_required (docs/contract.md#approval): where a person approves, and
	// until when.
	ApprovalURL string     `json:"approval_url,omitempty"`
	ApprovalID  string     `json:"approval_id,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`

	retryAfter int
}

// newProblem builds the problem for code from the error table; an empty
// detail takes the row's public message.
func newProblem(code errcode.Code, detail string) *problem {
	row := errcode.Lookup(code)
	if detail == "" {
		detail = row.Public
	}
	return &problem{
		Type: problemTypeBase + string(row.Code), Title: row.Title, Status: row.Status, Detail: detail,
		Code: row.Code, Retryable: row.Retryable, NextStep: row.OperatorStep, retryAfter: int(row.RetryAfter.Seconds()),
	}
}

// WriteError answers err as a problem document, for the HTTP edge's panic
// recovery, so every error a REST caller sees has the one shape.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	fail(w, r, err, "")
}

// statusError refuses a request with a status more precise than its code's
// (405, 413, 415 are all invalid_input).
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// invalid returns an invalid_input error about one field, parameter or
// header, so the problem's errors member names it.
func invalid(field, message string) error {
	return &tickets.ValidationError{Fields: []tickets.FieldError{{Field: field, Message: message}}}
}

// fail answers err as a problem. The code comes from errcode.Of alone, and
// the detail follows the error table's one policy on what a caller may read
// (errcode.Code.Message); a hidden cause is only logged. operationID, when
// known, is echoed so the caller can ask GET /api/v1/operations/{operation_id}.
func fail(w http.ResponseWriter, r *http.Request, err error, operationID string) {
	code := errcode.Of(err)
	var p *problem
	var ve *tickets.ValidationError
	switch {
	case code == errcode.InvalidInput && errors.As(err, &ve):
		msgs := make([]string, len(ve.Fields))
		for i, f := range ve.Fields {
			msgs[i] = f.Field + ": " + f.Message
		}
		p = newProblem(code, strings.Join(msgs, "; "))
		p.Errors = ve.Fields
	case errors.Is(err, operations.ErrNotFound):
		p = newProblem(code, "Nothing ran under this operation ID for your tenant: nothing was created, updated or commented on with it, and it is safe to use it as the Idempotency-Key of the request you intended.")
	default:
		p = newProblem(code, code.Message(err))
	}
	var se *statusError
	if errors.As(err, &se) {
		p.Status = se.status
	}
	var ask *approval.RequiredError
	if errors.As(err, &ask) {
		at := ask.Approval.ExpiresAt
		p.ApprovalURL, p.ApprovalID, p.ExpiresAt = ask.URL, ask.Approval.ID, &at
	}
	p.OperationID = operationID
	noteError(r, code, err)
	writeProblem(w, r, p)
}

// writeProblem sends p, with Retry-After when the code asks for one and the
// request ID on server-side failures, so an operator can find the log line.
func writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
	if p.Status >= http.StatusInternalServerError {
		p.RequestID = requestID(r)
	}
	if p.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.retryAfter))
	}
	writeBody(w, "application/problem+json", p.Status, p)
}

// writeJSON sends v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, "application/json", status, v)
}

func writeBody(w http.ResponseWriter, contentType string, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every value sent is one of this package's own types, which always
		// marshal; reaching here is a bug worth a plain 500.
		http.Error(w, "internal error: encode response", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func (a *api) notFound(w http.ResponseWriter, r *http.Request) {
	p := newProblem(errcode.NotFound, "No such endpoint: "+r.URL.Path+". The API is described at /api/v1/openapi.json.")
	noteError(r, p.Code, nil)
	writeProblem(w, r, p)
}

// methodNotAllowed answers 405 with an Allow header. chi leaves Allow out when
// a custom handler is set, so the allowed methods are found by asking the
// router about each one.
func (a *api) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if a.mux.Match(chi.NewRouteContext(), m, r.URL.Path) {
			w.Header().Add("Allow", m)
		}
	}
	p := newProblem(errcode.InvalidInput, "Method "+r.Method+" is not allowed on "+r.URL.Path+"; see Allow.")
	p.Status = http.StatusMethodNotAllowed
	noteError(r, p.Code, nil)
	writeProblem(w, r, p)
}
