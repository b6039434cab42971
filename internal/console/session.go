package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// The session cookie holds a console session's secret (Sessions), never the
// bearer token it signed in with. Exactly when the public URL is https
// (Config.Secure) it is hostCookieName, set Secure: the __Host- prefix makes
// browsers accept it only when set Secure, for Path=/ and without Domain,
// from this host over https, so a page on another port or subdomain of the
// host cannot plant or override it (cookie tossing). Over plain http (dev)
// there is no such protection; a request with two session cookies is
// refused either way, which is what a planted cookie with a longer path
// beside the real one looks like.
const (
	cookieName     = "ticketd_console"
	hostCookieName = "__Host-ticketd_console"
)

// sessionCookie names the session cookie and its path: the public URL's
// scheme decides, never the request's (a proxy in front may speak either).
func (c *console) sessionCookie() (name, path string) {
	if c.secure {
		return hostCookieName, "/"
	}
	return cookieName, "/console"
}

// errTwoSessions is a request carrying more than one session cookie.
var errTwoSessions = errors.New("two console session cookies")

// sessionToken returns the request's one session cookie value, "" when there
// is none, or errTwoSessions. Over https a cookie without the __Host- prefix
// is ignored: anyone on the host could have set it.
func (c *console) sessionToken(r *http.Request) (string, error) {
	name, _ := c.sessionCookie()
	var found []string
	for _, ck := range r.Cookies() {
		if ck.Name == name {
			found = append(found, ck.Value)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", errTwoSessions
}

// csrfLabel is the message the CSRF token authenticates.
const csrfLabel = "ticketd console csrf v1"

// csrfToken derives the session's CSRF token: an HMAC keyed by the session
// secret, so it is stable for the session, differs between sessions, reveals
// nothing about the secret, and needs no server-side key shared by replicas.
func csrfToken(sessionSecret string) string {
	m := hmac.New(sha256.New, []byte(sessionSecret))
	m.Write([]byte(csrfLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// request is what a signed-in handler knows about its caller.
type request struct {
	principal authn.Principal
	csrf      string
	secret    string // the session's, for sign-out
}

// caller is who the service acts for.
func (req *request) caller() tickets.Caller {
	return tickets.Caller{Tenant: req.principal.Tenant, Subject: req.principal.Subject}
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, req *request)

// session looks the session up on every request (a signed-out or expired
// one opens nothing) and, for a POST, checks the CSRF token. Without a
// valid session a GET is sent to sign in and back; a POST is refused, since
// replaying a form after sign-in would be a surprise.
func (c *console) session(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		session, err := c.sessionToken(r)
		if err != nil {
			// One of them was planted by someone else (cookie tossing):
			// acting on either could file the user's work into another
			// tenant. Clear ours and say so.
			c.clearCookie(w, r)
			c.fail(w, r, nil, http.StatusBadRequest, problemFor(errcode.InvalidInput,
				"This request carried two console session cookies, so neither was trusted. Clear this site's cookies in your browser and sign in again."))
			return
		}
		if session == "" {
			c.toSignIn(w, r, "")
			return
		}
		p, err := c.sessions.principal(r.Context(), session)
		switch {
		case errors.Is(err, errNoSession):
			c.clearCookie(w, r)
			c.toSignIn(w, r, err.Error())
			return
		case err != nil:
			c.log.ErrorContext(r.Context(), "console: session", "err", err)
			c.fail(w, r, nil, http.StatusServiceUnavailable, problemFor(errcode.Unavailable, "The console session store is unavailable."))
			return
		}
		req := &request{principal: p, csrf: csrfToken(session), secret: session}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, tickets.MaxInputBytes)
			if err := r.ParseForm(); err != nil {
				status := http.StatusBadRequest
				if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
					status = http.StatusRequestEntityTooLarge
				}
				c.fail(w, r, req, status, problemFor(errcode.InvalidInput, "The form could not be read: "+err.Error()))
				return
			}
			if !hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(req.csrf)) {
				c.fail(w, r, req, http.StatusForbidden, problemFor(errcode.Forbidden,
					"This form did not come from your console session (its CSRF token is missing or stale). Reload the page and submit again."))
				return
			}
		}
		h(w, r, req)
	})
}

// reader and writer require the scopes REST requires for the same actions.
func (c *console) reader(h handlerFunc) http.Handler { return c.session(c.require(authn.ScopeRead, h)) }
func (c *console) writer(h handlerFunc) http.Handler {
	return c.session(c.require(authn.ScopeWrite, h))
}

// admin guards the webhook pages with the scope REST's webhook routes need.
func (c *console) admin(h handlerFunc) http.Handler { return c.session(c.require(authn.ScopeAdmin, h)) }

func (c *console) require(scope string, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, req *request) {
		if !req.principal.HasScope(scope) {
			c.fail(w, r, req, http.StatusForbidden, problemFor(errcode.Forbidden,
				"This page needs the "+scope+" scope, which your token does not grant."))
			return
		}
		h(w, r, req)
	}
}

// toSignIn answers a request without a valid session.
func (c *console) toSignIn(w http.ResponseWriter, r *http.Request, reason string) {
	q := url.Values{}
	if r.Method == http.MethodGet {
		q.Set("next", r.URL.RequestURI())
	}
	if reason != "" {
		q.Set("reason", "expired")
	}
	http.Redirect(w, r, "/console/signin?"+q.Encode(), http.StatusSeeOther)
}

// signInData is the sign-in page.
type signInData struct {
	Next    string
	Expired bool
}

func (c *console) signInPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c.render(w, r, nil, http.StatusOK, "signin", layout{Title: "Sign in"},
		signInData{Next: localNext(q.Get("next")), Expired: q.Get("reason") == "expired"})
}

// signIn checks the token once before keeping it, so a typo or a token
// that opens no page (neither tickets:read nor tickets:approve) is refused
// here rather than on the next page. A sign-in code (SignInCodes) instead
// of a token opens the session of the principal it was issued for, once.
func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, tickets.MaxInputBytes)
	if err := r.ParseForm(); err != nil {
		c.render(w, r, nil, http.StatusBadRequest, "signin",
			layout{Title: "Sign in", Problem: problemFor(errcode.InvalidInput, "The form could not be read.")}, signInData{})
		return
	}
	next := localNext(r.PostForm.Get("next"))
	raw := strings.TrimSpace(r.PostForm.Get("token"))
	if len(raw) > 7 && strings.EqualFold(raw[:7], "bearer ") {
		raw = strings.TrimSpace(raw[7:])
	}
	data := signInData{Next: next}
	if code := strings.TrimSpace(r.PostForm.Get("code")); code != "" {
		p, ok := c.codes.redeem(code)
		if !ok {
			c.render(w, r, nil, http.StatusUnauthorized, "signin", layout{Title: "Sign in", Problem: problemFor(errcode.Unauthenticated,
				"This sign-in link was used already or has expired; each link signs in once. Restart ticketd serve --dev for a new one, or paste a token.")}, data)
			return
		}
		c.startSession(w, r, p, next)
		return
	}
	if raw == "" {
		c.render(w, r, nil, http.StatusBadRequest, "signin",
			layout{Title: "Sign in", Problem: problemFor(errcode.InvalidInput, "Paste a bearer token to sign in.")}, data)
		return
	}
	p, err := c.verifier.Verify(r.Context(), raw)
	if err != nil {
		// Verify's messages never quote the token.
		c.render(w, r, nil, http.StatusUnauthorized, "signin",
			layout{Title: "Sign in", Problem: problemFor(errcode.Unauthenticated, "This token was not accepted: "+err.Error()+".")}, data)
		return
	}
	if !p.HasScope(authn.ScopeRead) && !p.HasScope(authn.ScopeApprove) {
		c.render(w, r, nil, http.StatusForbidden, "signin", layout{Title: "Sign in", Problem: problemFor(errcode.Forbidden,
			"This token has neither the tickets:read scope the console needs to show tickets nor the tickets:approve scope its approval pages need.")}, data)
		return
	}
	c.startSession(w, r, p, next)
}

// startSession opens a console session for p, sets its cookie and sends the
// browser on to next.
func (c *console) startSession(w http.ResponseWriter, r *http.Request, p authn.Principal, next string) {
	data := signInData{Next: next}
	secret, err := c.sessions.create(r.Context(), p)
	if err != nil {
		c.log.ErrorContext(r.Context(), "console: sign in", "err", err)
		c.render(w, r, nil, http.StatusServiceUnavailable, "signin", layout{Title: "Sign in", Problem: problemFor(errcode.Unavailable, "The console session store is unavailable.")}, data)
		return
	}
	// No Expires or Max-Age: the cookie ends with the browser session, and
	// the session itself at the token's exp or after MaxSessionAge.
	name, path := c.sessionCookie()
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: secret, Path: path, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *console) signOut(w http.ResponseWriter, r *http.Request, req *request) {
	if err := c.sessions.end(r.Context(), req.secret); err != nil {
		c.log.ErrorContext(r.Context(), "console: sign out", "err", err)
		c.fail(w, r, req, http.StatusServiceUnavailable, problemFor(errcode.Unavailable, "Signing out failed; the session is still open. Try again."))
		return
	}
	c.clearCookie(w, r)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

func (c *console) clearCookie(w http.ResponseWriter, r *http.Request) {
	name, path := c.sessionCookie()
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure,
	})
}

// localNext returns next when it is a path inside the console, so sign-in
// can never redirect elsewhere (an open redirect); otherwise the tickets page.
func localNext(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(next, Prefix) || strings.ContainsAny(next, "\\\r\n") {
		return "/console/tickets"
	}
	return next
}
