// Package console is ticketd's web console for people: server-rendered pages
// over the same tickets.Service and the same scopes as the REST and MCP
// transports, with a little external JavaScript for progressive enhancement.
//
// Sign-in takes a bearer token (or a sign-in link's single-use code,
// SignInCodes), checks it once, and opens a console session
// of its own (Sessions): its secret, not the token, goes in an HttpOnly,
// SameSite=Strict session cookie scoped to /console (a Secure __Host-
// cookie, which no other origin on the host can plant, exactly when the
// public URL is https; a request with two session cookies is refused);
// sign-out ends the session on every replica.
// The session ends when the token would have, or after MaxSessionAge. Every POST is
// checked twice against cross-site forgery: the standard library's
// cross-origin protection (Sec-Fetch-Site and Origin) and a CSRF token derived
// from the session cookie. Every form that writes carries an operation ID
// minted when the form is rendered, so a double submit or a resubmit after a
// lost reply is one change: the retry contract (docs/contract.md#the-retry-contract) for people.
package console

import (
	"embed"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// Prefix is the path the console is served under; the handler expects full
// paths (mount it as mux.Handle(console.Prefix, h)).
const Prefix = "/console/"

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config wires the console to its dependencies.
type Config struct {
	// Service answers every page and form; required.
	Service *tickets.Service
	// Verifier checks the bearer token a person signs in with; required.
	Verifier *authn.Verifier
	// Sessions keeps the console sessions (NewSessions); required.
	Sessions *Sessions
	// Logger receives unexpected errors (never a token); nil discards them.
	Logger *slog.Logger
	// Secure is true exactly when the public URL is https: the session
	// cookie is then __Host- prefixed and Secure, and otherwise neither,
	// whatever scheme a request arrives by.
	Secure bool
	// SignInCodes, when set, lets a sign-in link's single-use code
	// (SignInCodes.Issue) open a session instead of a pasted token; nil
	// accepts tokens only.
	SignInCodes *SignInCodes
	// Webhooks adds the failed-deliveries page (tickets:admin); nil leaves
	// it out.
	Webhooks *webhooks.Service
	// Approvals adds the approval pages, where a person approves or declines
	// a write an agent asked for (docs/contract.md#approval); nil leaves them out.
	Approvals *approval.Gate
}

// console is the state the handlers share.
type console struct {
	svc      *tickets.Service
	verifier *authn.Verifier
	sessions *Sessions
	log      *slog.Logger
	secure   bool
	pages    pages
	hooks    *webhooks.Service
	gate     *approval.Gate
	codes    *SignInCodes
	nav      []nav
}

// New returns the console's handler for the full /console/... paths. It
// panics on a Config without Service or Verifier, or with a template that
// does not parse: wiring bugs no request could recover from.
func New(cfg Config) http.Handler {
	if cfg.Service == nil || cfg.Verifier == nil || cfg.Sessions == nil {
		panic("console.New: Config.Service, Config.Verifier and Config.Sessions are required")
	}
	c := &console{svc: cfg.Service, verifier: cfg.Verifier, sessions: cfg.Sessions, log: cfg.Logger, secure: cfg.Secure, pages: mustParsePages(),
		hooks: cfg.Webhooks, gate: cfg.Approvals, codes: cfg.SignInCodes}
	c.nav = slices.Clone(navigation)
	if c.hooks != nil {
		c.nav = append(c.nav, deliveriesNav)
	}
	if c.gate != nil {
		c.nav = append(c.nav, approvalsNav)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c.routes()
}

// routes is the console's whole surface in one place.
func (c *console) routes() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err) // the embedded directory exists: go:embed would not compile otherwise
	}
	mux.Handle("GET /console/static/", http.StripPrefix("/console/static/", http.FileServerFS(static)))

	mux.HandleFunc("GET /console/signin", c.signInPage)
	mux.HandleFunc("POST /console/signin", c.signIn)
	mux.Handle("POST /console/signout", c.session(c.signOut))

	mux.Handle("GET /console/{$}", http.RedirectHandler("/console/tickets", http.StatusSeeOther))
	mux.Handle("GET /console/tickets", c.reader(c.ticketsPage))
	mux.Handle("GET /console/tickets/new", c.writer(c.newTicketPage))
	mux.Handle("POST /console/tickets/bulk", c.writer(c.bulkUpdate))
	mux.Handle("POST /console/tickets", c.writer(c.createTicket))
	mux.Handle("GET /console/tickets/{ref}", c.reader(c.ticketPage))
	mux.Handle("POST /console/tickets/{ref}/update", c.writer(c.updateTicket))
	mux.Handle("POST /console/tickets/{ref}/comments", c.writer(c.addComment))
	mux.Handle("POST /console/tickets/{ref}/links", c.writer(c.linkTicket))
	mux.Handle("GET /console/operations", c.reader(c.operationsPage))
	mux.Handle("GET /console/operations/{id}", c.reader(c.operationPage))
	mux.Handle("POST /console/operations/{id}/reconcile", c.admin(c.reconcileOperation))
	mux.Handle("POST /console/operations/{id}/resolve", c.admin(c.resolveOperation))
	mux.Handle("GET /console/projects", c.reader(c.projectsPage))
	if c.hooks != nil {
		mux.Handle("GET /console/deliveries", c.admin(c.deliveriesPage))
		mux.Handle("POST /console/webhooks/{webhook}/deliveries/{delivery}/retry", c.admin(c.retryDelivery))
	}
	if c.gate != nil {
		mux.Handle("GET /console/approvals", c.approver(c.approvalsPage))
		mux.Handle("GET /console/approvals/{id}", c.approver(c.approvalPage))
		mux.Handle("POST /console/approvals/{id}/approve", c.approver(c.approve))
		mux.Handle("POST /console/approvals/{id}/decline", c.approver(c.decline))
	}
	mux.HandleFunc("/console/", c.notFound)

	// Cross-origin POSTs are refused before any handler runs, the sign-in
	// form included (it has no session yet, so no CSRF token to check).
	return securityHeaders(http.NewCrossOriginProtection().Handler(mux))
}

// contentSecurityPolicy allows only the console's own scripts, styles and
// form targets: no inline script or style anywhere, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"form-action 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'"

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
