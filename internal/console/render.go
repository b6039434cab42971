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
var pageNames = []string{"signin", "error", "tickets", "ticket", "new", "operations", "operation", "projects", "deliveries", "approvals", "approval", "bulk"}

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
	// Pending is set when the page's form waits for a person's approval.
	Pending *pendingApproval
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

// problemFor is the problem for code with message, its next step from the
// code's row of errcode.Table.
func problemFor(code errcode.Code, message string) *problem {
	return &problem{Code: code, Message: message, Next: errcode.Lookup(code).PersonStep}
}

// problemOf classifies a service error and returns it with its HTTP status,
// both from errcode.Table. A server fault is logged with its cause, which
// the page never shows.
func (c *console) problemOf(r *http.Request, err error) (*problem, int) {
	code := errcode.Of(err)
	row := errcode.Lookup(code)
	if code.ServerFault() {
		c.log.ErrorContext(r.Context(), "console: server fault", "code", code, "path", r.URL.Path, "err", err)
	}
	return problemFor(code, personMessage(row, err)), row.Status
}

// personMessage is what a person reads about err: under the table's one
// policy (errcode.Row.ShowCause) the error's own text, a validation error's
// fields written for a page, only when it names the caller's mistake and
// carries no internals; else the row's public message. A driver's text,
// with its user, database, host and port, never reaches a page.
func personMessage(row *errcode.Row, err error) string {
	if !row.ShowCause {
		return sentence(row.Public)
	}
	var (
		ve  *tickets.ValidationError
		vce *tickets.VersionConflictError
	)
	switch {
	case errors.As(err, &ve):
		parts := make([]string, len(ve.Fields))
		for i, f := range ve.Fields {
			parts[i] = f.Field + " " + f.Message
		}
		return strings.Join(parts, "; ")
	case errors.As(err, &vce):
		return vce.Error()
	}
	return err.Error()
}

// sentence writes a table message as a page does: capitalised, with a full
// stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
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
