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
)

// cookieName holds the session: the bearer token itself, so the console keeps
// no state of its own and any replica can serve any request.
const cookieName = "ticketd_console"

// maxFormBytes bounds every form body; the largest field (a description or
// comment of 20000 characters) fits with room to spare.
const maxFormBytes = 256 << 10

// csrfLabel is the message the CSRF token authenticates.
const csrfLabel = "ticketd console csrf v1"

// csrfToken derives the session's CSRF token: an HMAC keyed by the session
// token, so it is stable for the session, differs between sessions, reveals
// nothing about the token, and needs no server-side secret shared by replicas.
func csrfToken(sessionToken string) string {
	m := hmac.New(sha256.New, []byte(sessionToken))
	m.Write([]byte(csrfLabel))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// request is what a signed-in handler knows about its caller.
type request struct {
	principal authn.Principal
	csrf      string
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, req *request)

// session verifies the session token on every request (expiry and scopes are
// whatever the token says now) and, for a POST, the CSRF token. Without a
// valid session a GET is sent to sign in and back; a POST is refused, since
// replaying a form after sign-in would be a surprise.
func (c *console) session(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cookie, err := r.Cookie(cookieName)
		if err != nil || cookie.Value == "" {
			c.toSignIn(w, r, "")
			return
		}
		p, err := c.verifier.Verify(r.Context(), cookie.Value)
		if err != nil {
			c.clearCookie(w, r)
			c.toSignIn(w, r, err.Error())
			return
		}
		req := &request{principal: p, csrf: csrfToken(cookie.Value)}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
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
// without tickets:read is refused here rather than on the next page.
func (c *console) signIn(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
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
	if !p.HasScope(authn.ScopeRead) {
		c.render(w, r, nil, http.StatusForbidden, "signin", layout{Title: "Sign in", Problem: problemFor(errcode.Forbidden,
			"This token lacks the tickets:read scope the console needs to show anything.")}, data)
		return
	}
	// No Expires or Max-Age: the cookie ends with the browser session, and
	// the token's own exp ends it sooner.
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: raw, Path: "/console", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure || r.TLS != nil,
	})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *console) signOut(w http.ResponseWriter, r *http.Request, _ *request) {
	c.clearCookie(w, r)
	http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
}

func (c *console) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: "", Path: "/console", MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: c.secure || r.TLS != nil,
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
