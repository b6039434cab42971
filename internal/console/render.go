package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// pageNames are the templates under templates/, each rendered inside base.html.
var pageNames = []string{"signin", "error", "tickets", "ticket", "new", "operations", "operation", "projects", "deliveries"}

type pages map[string]*template.Template

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"deref": func(t *time.Time) time.Time { return *t },
	"words": func(s any) string { return strings.ReplaceAll(fmt.Sprint(s), "_", " ") },
	"join":  func(l []string) string { return strings.Join(l, ", ") },
	"value": changeValue,
}

// changeValue shows one side of a history change: a label list, a text, or
// nothing (an unset assignee).
func changeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "—"
	case []string:
		if len(v) == 0 {
			return "(none)"
		}
		return strings.Join(v, ", ")
	default:
		return fmt.Sprint(v)
	}
}

func mustParsePages() pages {
	p := pages{}
	for _, name := range pageNames {
		p[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/base.html", "templates/"+name+".html"))
	}
	return p
}

// nav is one entry of the navigation bar.
type nav struct {
	Path, Label string
}

var navigation = []nav{
	{"/console/tickets", "Tickets"},
	{"/console/tickets/new", "New ticket"},
	{"/console/operations", "Operations"},
	{"/console/projects", "Projects"},
}

// deliveriesNav is the failed-deliveries entry, shown when the console has
// webhooks.
var deliveriesNav = nav{"/console/deliveries", "Failed deliveries"}

// layout is what base.html needs besides the page itself.
type layout struct {
	Title   string
	Nav     string // Path of the active navigation entry
	Notice  string // a success or replay message
	Problem *problem
	// Set for signed-in pages.
	Who      *authn.Principal
	CSRF     string
	CanWrite bool
}

// view is a template's data: the layout and the page's own data.
type view struct {
	layout
	Navigation []nav
	Page       any
}

// render writes a whole page, or a 500 if the template fails: it renders
// into a buffer first so a half-written page is never sent.
func (c *console) render(w http.ResponseWriter, r *http.Request, req *request, status int, name string, l layout, page any) {
	if req != nil {
		l.Who, l.CSRF, l.CanWrite = &req.principal, req.csrf, req.principal.HasScope(authn.ScopeWrite)
	}
	var buf bytes.Buffer
	if err := c.pages[name].ExecuteTemplate(&buf, "base", view{layout: l, Navigation: c.nav, Page: page}); err != nil {
		c.log.ErrorContext(r.Context(), "console: render page", "page", name, "err", err)
		http.Error(w, "internal error rendering the page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages may be revalidated but are never stored by shared caches. Not
	// no-store: the back button should show the form as it was, with its
	// operation ID, so resubmitting it is a replay and not a second change.
	h.Set("Cache-Control", "private, no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// problem is an error as a person sees it: the contract's code, what
// happened, and what to do next.
type problem struct {
	Code    errcode.Code
	Message string
	Next    string
}

// codeForm is how the console answers one contract code.
type codeForm struct {
	status int
	next   string // the next step, for a person at a form (errcode's are for agents)
}

var codes = map[errcode.Code]codeForm{
	errcode.InvalidInput: {http.StatusBadRequest,
		"Nothing was changed. Correct what the message names and submit again; the form keeps its key, so it is still one change."},
	errcode.IdempotencyConflict: {http.StatusUnprocessableEntity,
		"This form's key was already used for a different change, so nothing was written. The form now has a new key: submit it only if you mean a separate change."},
	errcode.OperationInProgress: {http.StatusConflict,
		"The same submission is still being processed. Wait a moment and submit the form again as it is; it will not apply twice."},
	errcode.OutcomeUnknown: {http.StatusServiceUnavailable,
		"The change may or may not have been saved. Submit the form again exactly as it is: its key makes it apply at most once. The Operations page shows what became of it."},
	errcode.OperationFailed: {http.StatusUnprocessableEntity,
		"An earlier attempt with this key failed for the reason given, and repeating it fails the same way. Fix the cause and start from a fresh form."},
	errcode.NotFound: {http.StatusNotFound,
		"Nothing with that identifier exists in your tenant. Check it, or find it from the Tickets page."},
	errcode.AlreadyExists: {http.StatusConflict,
		"Something with that identifier already exists. Use it, or choose another identifier."},
	errcode.VersionConflict: {http.StatusConflict,
		"The ticket changed since the form was shown, so nothing was written. The form now shows the current values: check them and make your change again."},
	errcode.StateConflict: {http.StatusConflict,
		"This does not fit the current state (the message says why), so nothing was changed. Reload the page and decide again."},
	errcode.Forbidden: {http.StatusForbidden,
		"Your token lacks the scope for this. Sign out and sign in with a token that has it."},
	errcode.Unauthenticated: {http.StatusUnauthorized,
		"Sign in with a valid bearer token (for example one from ticketd token)."},
	errcode.Unavailable: {http.StatusServiceUnavailable,
		"The ticket store is unavailable and nothing was written. Submit the form again in a moment; it will not apply twice."},
	errcode.Internal: {http.StatusInternalServerError,
		"Something went wrong on the server and was logged. Submit the form again (it will not apply twice), and report it if it persists."},
}

func problemFor(code errcode.Code, message string) *problem {
	return &problem{Code: code, Message: message, Next: codes[code].next}
}

// problemOf classifies a service error and returns it with its HTTP status.
// Internal errors are logged: only they are bugs.
func (c *console) problemOf(r *http.Request, err error) (*problem, int) {
	code := errcode.Of(err)
	if code == errcode.Internal {
		c.log.ErrorContext(r.Context(), "console: unexpected error", "path", r.URL.Path, "err", err)
		return problemFor(code, "An internal error occurred."), codes[code].status
	}
	message := err.Error()
	var (
		ve  *tickets.ValidationError
		vce *tickets.VersionConflictError
	)
	if errors.As(err, &vce) {
		message = vce.Error()
	}
	if errors.As(err, &ve) {
		parts := make([]string, len(ve.Fields))
		for i, f := range ve.Fields {
			parts[i] = f.Field + " " + f.Message
		}
		message = strings.Join(parts, "; ")
	}
	return problemFor(code, message), codes[code].status
}

// fail shows an error page.
func (c *console) fail(w http.ResponseWriter, r *http.Request, req *request, status int, p *problem) {
	c.render(w, r, req, status, "error", layout{Title: "Error", Problem: p}, nil)
}

// failErr shows a service error on the error page.
func (c *console) failErr(w http.ResponseWriter, r *http.Request, req *request, err error) {
	p, status := c.problemOf(r, err)
	c.fail(w, r, req, status, p)
}

func (c *console) notFound(w http.ResponseWriter, r *http.Request) {
	c.fail(w, r, nil, http.StatusNotFound, problemFor(errcode.NotFound, "There is no console page at "+r.URL.Path+"."))
}
