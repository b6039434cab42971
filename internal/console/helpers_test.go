package console_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

const (
	audience = "https://ticketd.test/mcp"
	tenant   = "acme"
)

// env is a console over a real service on SQLite, served by httptest.
type env struct {
	svc      *tickets.Service
	verifier *authn.Verifier
	srv      *httptest.Server

	mu   sync.Mutex
	uris []string // every request URI the server saw, as an access log would
}

// requestURIs returns the URIs of every request so far.
func (e *env) requestURIs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.uris)
}

func newEnv(t testing.TB, cfg console.Config) *env {
	t.Helper()
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	ticketstest.SeedSupport(t, svc, tenant)
	return serveConsole(t, svc, d.Gorm, cfg)
}

// serveConsole serves a console over svc, its sessions kept in sessionsDB.
func serveConsole(t testing.TB, svc *tickets.Service, sessionsDB *gorm.DB, cfg console.Config) *env {
	t.Helper()
	v := servertest.Verifier(t, audience)
	cfg.Service, cfg.Verifier, cfg.Sessions = svc, v, console.NewSessions(sessionsDB)
	e := &env{svc: svc, verifier: v}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, console.New(cfg))
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		e.uris = append(e.uris, r.RequestURI)
		e.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// token mints a token for subject with scopes, issued at issued.
func token(t testing.TB, subject string, issued time.Time, scopes ...string) string {
	t.Helper()
	return servertest.Mint(t, authn.TokenRequest{
		Issuer: servertest.Issuer, Audience: audience, Tenant: tenant, Subject: subject, Scopes: scopes, TTL: time.Hour,
	}, issued)
}

// client is a browser-like HTTP client: a cookie jar, and redirects not
// followed, so tests see each 303.
func (e *env) client(t testing.TB) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// signedIn returns a client signed in with tok.
func (e *env) signedIn(t testing.TB, tok string) *http.Client {
	t.Helper()
	c := e.client(t)
	resp := e.post(t, c, "/console/signin", url.Values{"token": {tok}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: status %d, want 303", resp.StatusCode)
	}
	return c
}

type page struct {
	status int
	header http.Header
	body   string
}

func (e *env) get(t testing.TB, c *http.Client, path string) page {
	t.Helper()
	resp, err := c.Get(e.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func (e *env) post(t testing.TB, c *http.Client, path string, form url.Values) *http.Response {
	t.Helper()
	resp, err := c.PostForm(e.srv.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func read(t testing.TB, resp *http.Response) page {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

var inputPattern = regexp.MustCompile(`<input type="hidden" name="([a-z_]+)" value="([^"]*)">`)

// form returns the hidden fields of the form with id in p, as rendered.
func (p page) form(t testing.TB, id string) url.Values {
	t.Helper()
	start := strings.Index(p.body, `id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no form %q in page:\n%s", id, p.body)
	}
	end := strings.Index(p.body[start:], "</form>")
	v := url.Values{}
	for _, m := range inputPattern.FindAllStringSubmatch(p.body[start:start+end], -1) {
		v.Add(m[1], html.UnescapeString(m[2]))
	}
	return v
}

func mustCreate(t testing.TB, svc *tickets.Service, subject, title string) tickets.Ticket {
	t.Helper()
	res, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: subject}, ticketstest.OpID(newID(t)), tickets.NewTicket{ProjectID: "support", Title: title})
	if err != nil {
		t.Fatal(err)
	}
	return res.Ticket
}

func newID(t testing.TB) string {
	t.Helper()
	return uuid.NewString()
}
