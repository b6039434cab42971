package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestConsoleBehindTheEdge reaches the console through the real server:
// the edge's request ID and the console's own Content-Security-Policy both
// survive the middleware chain, sign-in works, and / leads to the console.
func TestConsoleBehindTheEdge(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(method, path string, form url.Values) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, env.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
	assertCSP := func(resp *http.Response) {
		t.Helper()
		csp := resp.Header.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: Content-Security-Policy %q, want the console's strict policy", resp.Request.URL.Path, csp)
		}
		if resp.Header.Get(server.RequestIDHeader) == "" {
			t.Errorf("%s: no %s: the edge did not run", resp.Request.URL.Path, server.RequestIDHeader)
		}
	}

	if resp, _ := do(http.MethodGet, "/", nil); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/" {
		t.Errorf("GET / = %d to %q, want 303 to /console/", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, page := do(http.MethodGet, "/console/signin", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `id="signin"`) {
		t.Fatalf("GET /console/signin = %d:\n%s", resp.StatusCode, page)
	}
	assertCSP(resp)

	token := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	resp, _ = do(http.MethodPost, "/console/signin", url.Values{"token": {token}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in = %d, want 303", resp.StatusCode)
	}
	resp, page = do(http.MethodGet, "/console/projects", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "SUP") {
		t.Fatalf("GET /console/projects signed in = %d, want the project list:\n%s", resp.StatusCode, page)
	}
	assertCSP(resp)
	if resp, _ := do(http.MethodGet, "/console/static/console.js", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("GET /console/static/console.js = %d, want 200", resp.StatusCode)
	}
}
