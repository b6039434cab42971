package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// problemTypeBase prefixes every problem type URI; the contract code follows.
const problemTypeBase = "https://ticketd.dev/problems/"

// codeForm is how one contract code looks over HTTP.
type codeForm struct {
	status     int
	title      string
	detail     string // used when the error itself has nothing safer or better to say
	retryAfter int    // seconds; 0 sends no Retry-After
}

// codes is the one table from contract code to HTTP (DESIGN §3). Details are
// written for operators: they name REST concepts (Idempotency-Key) rather
// than the MCP tools' arguments.
var codes = map[errcode.Code]codeForm{
	errcode.InvalidInput: {http.StatusBadRequest, "Invalid input",
		"The request is invalid; nothing was attempted. Fix it and send it again (the same Idempotency-Key is fine).", 0},
	errcode.IdempotencyConflict: {http.StatusUnprocessableEntity, "Idempotency key reused",
		"This Idempotency-Key was already used with a different request; nothing was written. Use a new key only for a genuinely new ticket.", 0},
	errcode.OperationInProgress: {http.StatusConflict, "Request in progress",
		"A request with this Idempotency-Key is still running; retry the same request after Retry-After seconds.", 1},
	errcode.OutcomeUnknown: {http.StatusServiceUnavailable, "Outcome unknown",
		"The ticket may or may not have been created. Check GET /api/v1/operations/{operation_id}, or retry the same request with the same Idempotency-Key (never a new one).", 2},
	errcode.OperationFailed: {http.StatusUnprocessableEntity, "Operation failed",
		"This Idempotency-Key was used before and that request failed; nothing was created. Repeating it fails the same way: fix the cause and use a new key.", 0},
	errcode.NotFound: {http.StatusNotFound, "Not found",
		"Nothing with that identifier exists for your tenant.", 0},
	errcode.AlreadyExists: {http.StatusConflict, "Already exists",
		"Something with that identifier already exists; use it, or pick another identifier.", 0},
	errcode.Forbidden: {http.StatusForbidden, "Forbidden",
		"Your token lacks the scope this request needs.", 0},
	errcode.Unauthenticated: {http.StatusUnauthorized, "Unauthenticated",
		"A valid bearer token is required.", 0},
	errcode.Unavailable: {http.StatusServiceUnavailable, "Service unavailable",
		"The ticket store is unavailable and nothing was written; retry the same request shortly.", 5},
	errcode.Internal: {http.StatusInternalServerError, "Internal error",
		"An internal error occurred; retry the same request, and report the request_id if it persists.", 0},
}

// problem is an RFC 9457 problem document with ticketd's extension members.
type problem struct {
	Type        string               `json:"type"`
	Title       string               `json:"title"`
	Status      int                  `json:"status"`
	Detail      string               `json:"detail"`
	Code        errcode.Code         `json:"code"`
	Retryable   bool                 `json:"retryable"`
	Errors      []tickets.FieldError `json:"errors,omitempty"`
	OperationID string               `json:"operation_id,omitempty"`
	RequestID   string               `json:"request_id,omitempty"`

	retryAfter int
}

// newProblem builds the problem for code; an empty detail takes the table's.
func newProblem(code errcode.Code, detail string) *problem {
	form, ok := codes[code]
	if !ok {
		code, form = errcode.Internal, codes[errcode.Internal]
	}
	if detail == "" {
		detail = form.detail
	}
	return &problem{
		Type: problemTypeBase + string(code), Title: form.title, Status: form.status, Detail: detail,
		Code: code, Retryable: code.Retryable(), retryAfter: form.retryAfter,
	}
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

// fail answers err as a problem. The code comes from errcode.Of alone; for
// 5xx answers the error itself is only logged, because it may carry driver
// text the caller has no use for. operationID, when known, is echoed so the
// caller can ask GET /api/v1/operations/{operation_id}.
func (a *api) fail(w http.ResponseWriter, r *http.Request, err error, operationID string) {
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
	case code == errcode.InvalidInput:
		p = newProblem(code, err.Error())
	case code == errcode.NotFound && operationID != "":
		p = newProblem(code, "Nothing ran under this operation ID for your tenant: no ticket was created with it, and it is safe to use it as the Idempotency-Key of POST /api/v1/tickets.")
	default:
		p = newProblem(code, "")
	}
	var se *statusError
	if errors.As(err, &se) {
		p.Status = se.status
	}
	p.OperationID = operationID
	noteError(r, code, err)
	a.writeProblem(w, r, p)
}

// writeProblem sends p, with Retry-After when the code asks for one and the
// request ID on server-side failures, so an operator can find the log line.
func (a *api) writeProblem(w http.ResponseWriter, r *http.Request, p *problem) {
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
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func (a *api) notFound(w http.ResponseWriter, r *http.Request) {
	p := newProblem(errcode.NotFound, "No such endpoint: "+r.URL.Path+". The API is described at /api/v1/openapi.json.")
	noteError(r, p.Code, nil)
	a.writeProblem(w, r, p)
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
	a.writeProblem(w, r, p)
}
