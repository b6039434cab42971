package console_test

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	for _, path := range []string{"/console/signin", "/console/static/console.js", "/console/nowhere"} {
		p := e.get(t, e.client(t), path)
		h := p.header
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") ||
			!strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q", path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: X-Content-Type-Options %q, Referrer-Policy %q", path, h.Get("X-Content-Type-Options"), h.Get("Referrer-Policy"))
		}
	}
}

func TestPagesHaveNoInlineScriptOrStyle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	tk := mustCreate(t, e.svc, "alice", "Printer on fire")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeWrite, authn.ScopeRead))
	for _, path := range []string{"/console/signin", "/console/tickets", "/console/tickets/" + tk.Key, "/console/tickets/new",
		"/console/operations", "/console/projects"} {
		p := e.get(t, c, path)
		if p.status != http.StatusOK {
			t.Fatalf("%s: status %d", path, p.status)
		}
		for _, bad := range []string{"<script>", "<style", " style=", " onclick=", " onsubmit=", "javascript:"} {
			if strings.Contains(p.body, bad) {
				t.Errorf("%s contains %q", path, bad)
			}
		}
	}
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{Secure: true})

	t.Run("InvalidTokenIsRefused", func(t *testing.T) {
		t.Parallel()
		c := e.client(t)
		p := read(t, e.post(t, c, "/console/signin", url.Values{"token": {"not-a-jwt"}}))
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "unauthenticated") {
			t.Fatalf("status %d, body:\n%s", p.status, p.body)
		}
		if strings.Contains(p.body, "not-a-jwt") {
			t.Error("the refused token is echoed back")
		}
	})
	t.Run("ExpiredTokenIsRefused", func(t *testing.T) {
		t.Parallel()
		p := read(t, e.post(t, e.client(t), "/console/signin",
			url.Values{"token": {token(t, "alice", time.Now().Add(-2*time.Hour), authn.ScopeRead)}}))
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "expired") {
			t.Fatalf("status %d, body:\n%s", p.status, p.body)
		}
	})
	t.Run("TokenWithoutReadIsRefused", func(t *testing.T) {
		t.Parallel()
		p := read(t, e.post(t, e.client(t), "/console/signin", url.Values{"token": {token(t, "alice", time.Now(), authn.ScopeWrite)}}))
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "tickets:read") {
			t.Fatalf("status %d, body:\n%s", p.status, p.body)
		}
	})
	t.Run("SessionCookie", func(t *testing.T) {
		t.Parallel()
		resp := e.post(t, e.client(t), "/console/signin", url.Values{
			"token": {"Bearer " + token(t, "alice", time.Now(), authn.ScopeRead)}, "next": {"/console/projects"}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/projects" {
			t.Fatalf("status %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		cookies := resp.Cookies()
		if len(cookies) != 1 {
			t.Fatalf("cookies %v", cookies)
		}
		// Over https the cookie is __Host- prefixed (so Path=/, no Domain):
		// no other origin on this host can plant or override it.
		ck := cookies[0]
		if ck.Name != "__Host-ticketd_console" || !ck.HttpOnly || !ck.Secure || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" ||
			ck.Domain != "" || ck.MaxAge != 0 || !ck.Expires.IsZero() {
			t.Errorf("cookie %+v: want __Host-ticketd_console, HttpOnly, Secure, SameSite=Strict, Path=/, no Domain, a session cookie", ck)
		}
	})
	t.Run("CrossSiteSignInIsRefused", func(t *testing.T) {
		t.Parallel()
		// Login CSRF: another site must not sign a browser in with its token.
		form := url.Values{"token": {token(t, "mallory", time.Now(), authn.ScopeRead)}}
		req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/console/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "https://evil.example")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := e.client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Fatalf("status %d, cookies %v; want 403 and no session", resp.StatusCode, resp.Cookies())
		}
	})
	t.Run("NextOutsideTheConsoleIsIgnored", func(t *testing.T) {
		t.Parallel()
		for _, next := range []string{"https://evil.example/", "//evil.example/console/", "/api/v1/tickets", "/console\\@evil", "javascript:alert(1)"} {
			resp := e.post(t, e.client(t), "/console/signin", url.Values{"token": {token(t, "alice", time.Now(), authn.ScopeRead)}, "next": {next}})
			resp.Body.Close()
			if got := resp.Header.Get("Location"); got != "/console/tickets" {
				t.Errorf("next %q: redirected to %q", next, got)
			}
		}
	})
}

func TestSessionIsVerifiedOnEveryRequest(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})

	t.Run("NoSession", func(t *testing.T) {
		t.Parallel()
		p := e.get(t, e.client(t), "/console/tickets?status=open")
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/signin?next=%2Fconsole%2Ftickets%3Fstatus%3Dopen" {
			t.Fatalf("status %d, Location %q", p.status, p.header.Get("Location"))
		}
	})
	t.Run("ExpiredSessionIsSignedOut", func(t *testing.T) {
		t.Parallel()
		c := e.client(t)
		u, _ := url.Parse(e.srv.URL + "/console/")
		// A session that is no more (expired, signed out, or never issued).
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "ticketd_console", Value: "gone-session-secret", Path: "/console"}})
		p := e.get(t, c, "/console/tickets")
		if p.status != http.StatusSeeOther || !strings.Contains(p.header.Get("Location"), "reason=expired") {
			t.Fatalf("status %d, Location %q", p.status, p.header.Get("Location"))
		}
		if len(c.Jar.Cookies(u)) != 0 {
			t.Error("the expired session cookie was not cleared")
		}
	})
	t.Run("TwoSessionCookiesAreRefused", func(t *testing.T) {
		t.Parallel()
		// Cookie tossing over http: a page on another port of the host sets
		// its own session cookie with a longer path, which the browser sends
		// first, beside the victim's.
		c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
		u, _ := url.Parse(e.srv.URL + "/console/tickets/new")
		mallory := e.signedIn(t, token(t, "mallory", time.Now(), authn.ScopeRead, authn.ScopeWrite)).Jar.Cookies(u)[0]
		c.Jar.SetCookies(u, []*http.Cookie{{Name: "ticketd_console", Value: mallory.Value, Path: "/console/tickets"}})
		if n := len(c.Jar.Cookies(u)); n != 2 {
			t.Fatalf("%d cookies in the jar for %s, want the two sessions", n, u)
		}
		p := e.get(t, c, "/console/tickets/new")
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "two console session cookies") || strings.Contains(p.body, "mallory") {
			t.Fatalf("status %d, body:\n%s", p.status, p.body)
		}
	})
	t.Run("HTTPSIgnoresAnUnprefixedCookie", func(t *testing.T) {
		t.Parallel()
		// Over https only the __Host- cookie counts; a plain one could have
		// come from any origin on the host.
		https := newEnv(t, console.Config{Secure: true})
		req, _ := http.NewRequest(http.MethodGet, https.srv.URL+"/console/tickets", nil)
		req.AddCookie(&http.Cookie{Name: "ticketd_console", Value: "planted-session-secret"})
		resp, err := https.client(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/signin") {
			t.Fatalf("status %d, Location %q; want sent to sign in", resp.StatusCode, resp.Header.Get("Location"))
		}
		signIn := https.post(t, https.client(t), "/console/signin", url.Values{"token": {token(t, "alice", time.Now(), authn.ScopeRead)}})
		signIn.Body.Close()
		cookies := signIn.Cookies()
		if len(cookies) != 1 {
			t.Fatalf("sign-in cookies %v", cookies)
		}
		req, _ = http.NewRequest(http.MethodGet, https.srv.URL+"/console/tickets", nil)
		req.AddCookie(&http.Cookie{Name: cookies[0].Name, Value: cookies[0].Value})
		if p := read(t, mustDo(t, https.client(t), req)); p.status != http.StatusOK {
			t.Fatalf("with the __Host- cookie: status %d", p.status)
		}
		req, _ = http.NewRequest(http.MethodGet, https.srv.URL+"/console/tickets", nil)
		req.AddCookie(&http.Cookie{Name: "ticketd_console", Value: cookies[0].Value})
		if resp := mustDo(t, https.client(t), req); resp.StatusCode != http.StatusSeeOther {
			resp.Body.Close()
			t.Fatalf("the same session without the prefix over https: status %d, want sent to sign in", resp.StatusCode)
		}
	})
	t.Run("SignOutEndsTheSessionEverywhere", func(t *testing.T) {
		t.Parallel()
		tok := token(t, "alice", time.Now(), authn.ScopeRead)
		c := e.signedIn(t, tok)
		u, _ := url.Parse(e.srv.URL + "/console/")
		jar := c.Jar.Cookies(u)
		if len(jar) != 1 || jar[0].Value == tok || strings.Contains(tok, jar[0].Value) {
			t.Fatalf("session cookies %v: want one, holding a secret of its own, not the bearer token", jar)
		}
		if _, err := e.verifier.Verify(context.Background(), jar[0].Value); err == nil {
			t.Fatal("the session cookie is accepted as a bearer token: it would open /mcp and /api too")
		}
		// A copy of the cookie (another tab, or a stolen one) works until
		// sign-out, and not after it.
		copied := e.client(t)
		copied.Jar.SetCookies(u, jar)
		if p := e.get(t, copied, "/console/projects"); p.status != http.StatusOK {
			t.Fatalf("the copied session before sign-out: status %d", p.status)
		}
		p := e.get(t, c, "/console/projects")
		resp := e.post(t, c, "/console/signout", url.Values{"csrf": {p.form(t, "signout").Get("csrf")}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign out: status %d", resp.StatusCode)
		}
		if p := e.get(t, copied, "/console/projects"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/console/signin") {
			t.Fatalf("the copied session after sign-out: status %d, Location %q; want sent to sign in", p.status, p.header.Get("Location"))
		}
	})
	t.Run("SignOut", func(t *testing.T) {
		t.Parallel()
		c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead))
		p := e.get(t, c, "/console/projects")
		resp := e.post(t, c, "/console/signout", url.Values{"csrf": {p.form(t, "signout").Get("csrf")}})
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("sign out: status %d", resp.StatusCode)
		}
		if p := e.get(t, c, "/console/projects"); p.status != http.StatusSeeOther {
			t.Fatalf("after sign-out: status %d, want a redirect to sign in", p.status)
		}
	})
}

func TestForgedPostsChangeNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	good := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	good.Set("title", "Forged")
	good.Set("project_id", "support")

	cases := map[string]func() *http.Response{
		"MissingCSRFToken": func() *http.Response {
			f := url.Values{"operation_id": {good.Get("operation_id")}, "project_id": {"support"}, "title": {"Forged"}}
			return e.post(t, c, "/console/tickets", f)
		},
		"WrongCSRFToken": func() *http.Response {
			f := url.Values{"csrf": {"AAAA"}, "operation_id": {good.Get("operation_id")}, "project_id": {"support"}, "title": {"Forged"}}
			return e.post(t, c, "/console/tickets", f)
		},
		"CrossSiteRequest": func() *http.Response {
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/console/tickets", strings.NewReader(good.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		},
	}
	for name, send := range cases {
		resp := send()
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", name, resp.StatusCode)
		}
	}
	page, err := e.svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tickets) != 0 {
		t.Fatalf("forged posts created %d tickets", len(page.Tickets))
	}
}

func TestScopesMatchREST(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	tk := mustCreate(t, e.svc, "bob", "Read me")
	c := e.signedIn(t, token(t, "reader", time.Now(), authn.ScopeRead))

	p := e.get(t, c, "/console/tickets/"+tk.Key)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Read me") {
		t.Fatalf("read-only ticket page: status %d", p.status)
	}
	if strings.Contains(p.body, `id="edit-form"`) || strings.Contains(p.body, `id="comment-form"`) {
		t.Error("a read-only token is offered forms it cannot use")
	}
	if p := e.get(t, c, "/console/tickets/new"); p.status != http.StatusForbidden || !strings.Contains(p.body, "tickets:write") {
		t.Errorf("new ticket page for a read-only token: status %d", p.status)
	}
	csrf := p.form(t, "signout").Get("csrf")
	resp := e.post(t, c, "/console/tickets/"+tk.Key+"/comments", url.Values{"csrf": {csrf}, "operation_id": {newID(t)}, "body": {"hi"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("comment with a read-only token: status %d, want 403", resp.StatusCode)
	}
	comments, err := e.svc.ListComments(context.Background(), tenant, tk.Key, tickets.ListParams{})
	if err != nil || len(comments.Comments) != 0 {
		t.Fatalf("comments %v, err %v", comments.Comments, err)
	}
}

func TestDoubleSubmittedCreateIsOneTicket(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Printer on fire")
	f.Set("labels", "Hardware, urgent-ish")

	var locations []string
	for range 2 {
		resp := e.post(t, c, "/console/tickets", f)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("status %d, want 303", resp.StatusCode)
		}
		locations = append(locations, resp.Header.Get("Location"))
	}
	if locations[0] != "/console/tickets/SUP-1?done=created" || locations[1] != "/console/tickets/SUP-1?done=create-replayed" {
		t.Fatalf("redirects %q", locations)
	}
	if p := e.get(t, c, locations[1]); !strings.Contains(p.body, "Already done") {
		t.Errorf("the replay is not shown as already done:\n%s", p.body)
	}
	page, err := e.svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tickets) != 1 || page.Tickets[0].Reporter != "alice" || strings.Join(page.Tickets[0].Labels, ",") != "hardware,urgent-ish" {
		t.Fatalf("tickets %+v, want one by alice with labels hardware, urgent-ish", page.Tickets)
	}
}

func TestCreateErrorsKeepTheForm(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "   ")
	f.Set("description", "kept <b>as typed</b>")
	p := read(t, e.post(t, c, "/console/tickets", f))
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid_input") || !strings.Contains(p.body, "title is required") {
		t.Fatalf("status %d, body:\n%s", p.status, p.body)
	}
	if got := p.form(t, "new-ticket").Get("operation_id"); got != f.Get("operation_id") {
		t.Errorf("after invalid input the form's key changed from %s to %s; nothing was recorded, so it should stay", f.Get("operation_id"), got)
	}
	if !strings.Contains(p.body, "kept &lt;b&gt;as typed&lt;/b&gt;") {
		t.Error("the description typed is not shown again (escaped)")
	}

	// The same key with other input is an idempotency conflict: the form
	// comes back with a new key, for a person who means a separate ticket.
	f.Set("title", "First")
	read(t, e.post(t, c, "/console/tickets", f))
	f.Set("title", "Second")
	p = read(t, e.post(t, c, "/console/tickets", f))
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.body, "idempotency_conflict") {
		t.Fatalf("status %d, body:\n%s", p.status, p.body)
	}
	if p.form(t, "new-ticket").Get("operation_id") == f.Get("operation_id") {
		t.Error("after an idempotency conflict the form kept the used key")
	}
}

func TestUpdateForms(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	tk := mustCreate(t, e.svc, "bob", "Broken login")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	path := "/console/tickets/" + tk.Key

	t.Run("TransitionOffersOnlyAllowedMovesAndReplays", func(t *testing.T) {
		p := e.get(t, c, path)
		for _, move := range []string{"in_progress", "resolved", "closed"} {
			if !strings.Contains(p.body, `name="status" value="`+move+`"`) {
				t.Errorf("open ticket: move to %s not offered", move)
			}
		}
		if strings.Contains(p.body, `name="status" value="open"`) {
			t.Error("open ticket: a move to open is offered")
		}
		f := p.form(t, "status-form")
		f.Set("status", "resolved")
		var locations []string
		for range 2 {
			resp := e.post(t, c, path+"/update", f)
			resp.Body.Close()
			locations = append(locations, resp.Header.Get("Location"))
		}
		if locations[0] != path+"?done=updated" || locations[1] != path+"?done=update-replayed" {
			t.Fatalf("redirects %q", locations)
		}
		got, err := e.svc.GetTicket(context.Background(), tenant, tk.Key)
		if err != nil || got.Status != tickets.StatusResolved || got.Version != 2 {
			t.Fatalf("ticket %+v, err %v; want resolved at version 2", got, err)
		}
	})
	t.Run("AssignToMe", func(t *testing.T) {
		f := e.get(t, c, path).form(t, "assign-form")
		f.Set("assign", "me")
		resp := e.post(t, c, path+"/update", f)
		resp.Body.Close()
		got, err := e.svc.GetTicket(context.Background(), tenant, tk.Key)
		if err != nil || got.Assignee != "alice" {
			t.Fatalf("assignee %q, err %v; want alice", got.Assignee, err)
		}
	})
	t.Run("VersionConflictShowsCurrentValues", func(t *testing.T) {
		f := e.get(t, c, path).form(t, "edit-form")
		// Someone else retitles the ticket after the form was rendered.
		title := "Broken login on mobile"
		if _, err := e.svc.UpdateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), tk.Key, tickets.TicketUpdate{Title: &title}); err != nil {
			t.Fatal(err)
		}
		f.Set("title", "Login broken")
		f.Set("priority", "high")
		p := read(t, e.post(t, c, path+"/update", f))
		if p.status != http.StatusConflict || !strings.Contains(p.body, "version_conflict") {
			t.Fatalf("status %d, body:\n%s", p.status, p.body)
		}
		if !strings.Contains(p.body, `value="Broken login on mobile"`) {
			t.Error("the edit form does not show the current title")
		}
		got, err := e.svc.GetTicket(context.Background(), tenant, tk.Key)
		if err != nil || got.Title != title || got.Priority != tickets.PriorityNormal {
			t.Fatalf("ticket %+v, err %v: the stale edit was applied", got, err)
		}
		if again := p.form(t, "edit-form"); again.Get("if_version") != "4" {
			t.Errorf("re-shown form's if_version %q, want the current 4", again.Get("if_version"))
		}
	})
	t.Run("EditLabels", func(t *testing.T) {
		f := e.get(t, c, path).form(t, "edit-form")
		f.Set("title", "Broken login on mobile")
		f.Set("description", "")
		f.Set("priority", "normal")
		f.Set("labels", "auth, Mobile")
		resp := e.post(t, c, path+"/update", f)
		resp.Body.Close()
		f = e.get(t, c, path).form(t, "edit-form")
		f.Set("title", "Broken login on mobile")
		f.Set("priority", "normal")
		f.Set("labels", "mobile")
		resp = e.post(t, c, path+"/update", f)
		resp.Body.Close()
		got, err := e.svc.GetTicket(context.Background(), tenant, tk.Key)
		if err != nil || strings.Join(got.Labels, ",") != "mobile" {
			t.Fatalf("labels %q, err %v; want mobile", got.Labels, err)
		}
	})
}

func TestCommentReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	tk := mustCreate(t, e.svc, "bob", "Slow search")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	f := e.get(t, c, "/console/tickets/"+tk.Key).form(t, "comment-form")
	f.Set("body", "Looking into it.")
	var dones []string
	for range 2 {
		resp := e.post(t, c, "/console/tickets/"+tk.Key+"/comments", f)
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		dones = append(dones, loc.Query().Get("done"))
	}
	if dones[0] != "commented" || dones[1] != "comment-replayed" {
		t.Fatalf("done %q", dones)
	}
	comments, err := e.svc.ListComments(context.Background(), tenant, tk.Key, tickets.ListParams{})
	if err != nil || len(comments.Comments) != 1 {
		t.Fatalf("comments %+v, err %v; want one", comments.Comments, err)
	}
}

var nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

func TestTicketsPageFiltersAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	ctx := context.Background()
	for i := range 30 {
		title := "Routine check"
		if i%10 == 0 {
			title = "Printer jam"
		}
		res, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), tickets.NewTicket{ProjectID: "support", Title: title, Labels: []string{"batch"}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			me := "alice"
			if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), res.Ticket.Key, tickets.TicketUpdate{Assignee: &me}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead))
	rows := func(p page) int { return strings.Count(p.body, `<td data-label="Status"><span class="status`) }

	first := e.get(t, c, "/console/tickets?label=batch")
	if rows(first) != 25 || !strings.Contains(first.body, `rel="next"`) {
		t.Fatalf("first page: %d rows, next link %v", rows(first), strings.Contains(first.body, `rel="next"`))
	}
	m := nextLink.FindStringSubmatch(first.body)
	if m == nil {
		t.Fatal("no next-page link")
	}
	href := html.UnescapeString(m[1])
	second := e.get(t, c, href)
	if rows(second) != 5 || strings.Contains(second.body, `rel="next"`) || !strings.Contains(second.body, "First page") {
		t.Fatalf("second page (%s): %d rows", href, rows(second))
	}

	if p := e.get(t, c, "/console/tickets?q=printer"); rows(p) != 3 {
		t.Errorf("search for printer: %d rows, want 3", rows(p))
	}
	if p := e.get(t, c, "/console/tickets?assignee=me"); rows(p) != 1 || !strings.Contains(p.body, "SUP-1<") {
		t.Errorf("assignee=me: %d rows, want SUP-1 only", rows(p))
	}
	if p := e.get(t, c, "/console/tickets?status=sideways"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid_input") {
		t.Errorf("unknown status: %d", p.status)
	}
}

func TestOperationPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	opID := newID(t)
	if _, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(opID), tickets.NewTicket{ProjectID: "support", Title: "Check me"}); err != nil {
		t.Fatal(err)
	}
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead))

	if p := e.get(t, c, "/console/operations?id="+opID); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/operations/"+opID {
		t.Fatalf("look-up: status %d, Location %q", p.status, p.header.Get("Location"))
	}
	p := e.get(t, c, "/console/operations/"+opID)
	if p.status != http.StatusOK || !strings.Contains(p.body, "succeeded") || !strings.Contains(p.body, `href="/console/tickets/SUP-1"`) {
		t.Fatalf("operation page: status %d, body:\n%s", p.status, p.body)
	}
	if p := e.get(t, c, "/console/operations/"+newID(t)); p.status != http.StatusNotFound || !strings.Contains(p.body, "not_found") {
		t.Errorf("unused operation ID: status %d", p.status)
	}
	for _, status := range []string{"unknown", "pending", "failed"} {
		if p := e.get(t, c, "/console/operations?status="+status); p.status != http.StatusOK || !strings.Contains(p.body, "What to do") {
			t.Errorf("operations needing attention, %s: status %d", status, p.status)
		}
	}
	if p := e.get(t, c, "/console/operations?status=succeeded"); p.status != http.StatusBadRequest {
		t.Errorf("status=succeeded is not a state needing attention: status %d, want 400", p.status)
	}
}

func TestOversizedFormIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Huge")
	f.Set("description", strings.Repeat("x", 300<<10))
	p := read(t, e.post(t, c, "/console/tickets", f))
	if p.status != http.StatusRequestEntityTooLarge || !strings.Contains(p.body, "invalid_input") {
		t.Fatalf("status %d, want 413 invalid_input", p.status)
	}
	page, err := e.svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{})
	if err != nil || len(page.Tickets) != 0 {
		t.Fatalf("tickets %d, err %v; want none", len(page.Tickets), err)
	}
}

func mustDo(t *testing.T, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestCookieFollowsThePublicURLNotTheRequest: a request that arrives over
// TLS while the public URL is http gets the plain cookie, because the
// public URL's scheme alone decides (docs/approval.md, DESIGN §20).
func TestCookieFollowsThePublicURLNotTheRequest(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	h := console.New(console.Config{Service: svc, Verifier: servertest.Verifier(t, audience), Sessions: console.NewSessions(d.Gorm)})
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/console/signin",
		strings.NewReader(url.Values{"token": {token(t, "alice", time.Now(), authn.ScopeRead)}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ck := resp.Cookies(); len(ck) != 1 || ck[0].Name != "ticketd_console" || ck[0].Secure {
		t.Errorf("over TLS with an http public URL: cookies %+v; want the plain ticketd_console, not Secure", ck)
	}
}

// TestSignInCodeOpensOneSessionWithinItsTTL: a sign-in code opens a session
// of the principal it was issued for, once; a code past SignInCodeTTL, or
// on a console without codes, opens nothing.
func TestSignInCodeOpensOneSessionWithinItsTTL(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var mu sync.Mutex
	now := start
	codes := console.NewSignInCodes(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	e := newEnv(t, console.Config{SignInCodes: codes})
	person := authn.Principal{Tenant: tenant, Subject: "dev", Scopes: []string{authn.ScopeRead, authn.ScopeApprove}}
	signIn := func(code string) int {
		t.Helper()
		resp := e.post(t, e.client(t), "/console/signin", url.Values{"code": {code}})
		resp.Body.Close()
		return resp.StatusCode
	}
	code := codes.Issue(person)
	if status := signIn(code); status != http.StatusSeeOther {
		t.Fatalf("a fresh code = %d, want 303", status)
	}
	if status := signIn(code); status != http.StatusUnauthorized {
		t.Fatalf("the same code again = %d, want 401", status)
	}
	late := codes.Issue(person)
	mu.Lock()
	now = start.Add(console.SignInCodeTTL)
	mu.Unlock()
	if status := signIn(late); status != http.StatusUnauthorized {
		t.Fatalf("a code at its TTL = %d, want 401", status)
	}
	other := newEnv(t, console.Config{})
	resp := other.post(t, other.client(t), "/console/signin", url.Values{"code": {codes.Issue(person)}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a code on a console without codes = %d, want 401", resp.StatusCode)
	}
}
