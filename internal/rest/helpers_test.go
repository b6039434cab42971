package rest_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/logtest"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

const (
	tenantA          = "acme"
	tenantB          = "globex"
	issuer           = servertest.Issuer
	publicURL        = "http://ticketd.test"
	audience         = publicURL + "/mcp"
	resourceMetadata = publicURL + "/.well-known/oauth-protected-resource/mcp"
)

// secret signs the tokens the harness's verifier accepts, for tokens made
// wrong on purpose.
var secret = servertest.Secret

// env is one router over one database, served over real HTTP.
type env struct {
	d    *db.DB
	svc  *tickets.Service
	url  string
	logs *logtest.Buffer
}

// newEnv serves rest.NewRouter over d, with project "support" (key SUP) for
// tenantA and tenantB.
func newEnv(tb testing.TB, d *db.DB) *env {
	tb.Helper()
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	ticketstest.SeedSupport(tb, svc, tenantA, tenantB)
	return serveEnv(tb, d, svc, nil)
}

// serveEnv serves svc (and hooks, when not nil) behind the real edge, as the
// binary does (servertest): the edge assigns request IDs and writes the log
// line.
func serveEnv(tb testing.TB, d *db.DB, svc *tickets.Service, hooks *webhooks.Service) *env {
	tb.Helper()
	logs := &logtest.Buffer{}
	se := servertest.Start(tb, d, servertest.Options{
		Service: svc, Webhooks: hooks, PublicURL: publicURL,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		// The public URL is a name; the test server is reached by address.
		Edge: server.Edge{AllowedHosts: []string{"127.0.0.1"}},
	})
	return &env{d: d, svc: svc, url: se.URL, logs: logs}
}

// verifier accepts the tokens token mints.
func verifier(tb testing.TB) *authn.Verifier {
	tb.Helper()
	return servertest.Verifier(tb, audience)
}

// token mints a real HS256 JWT for tenant with scopes.
func token(tb testing.TB, tenant string, scopes ...string) string {
	tb.Helper()
	return servertest.Mint(tb, authn.TokenRequest{
		Issuer: issuer, Audience: audience, Tenant: tenant, Subject: "operator@" + tenant, Scopes: scopes, TTL: time.Hour,
	}, time.Now())
}

func admin(tb testing.TB, tenant string) string { return token(tb, tenant, authn.ScopeAdmin) }

// req is one HTTP request; zero fields are left out.
type req struct {
	method  string
	path    string
	token   string
	body    string
	ctype   string // defaults to application/json when body is set
	key     string // Idempotency-Key
	headers http.Header
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func do(tb testing.TB, e *env, r req) resp {
	tb.Helper()
	res, err := tryDo(e, r)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// tryDo is do for goroutines other than the test's, which must not call
// Fatal: it returns the failure instead.
func tryDo(e *env, r req) (resp, error) {
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr, err := http.NewRequest(cmp.Or(r.method, http.MethodGet), e.url+r.path, body)
	if err != nil {
		return resp{}, err
	}
	for k, vs := range r.headers {
		hr.Header[k] = vs
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	switch {
	case r.ctype != "":
		hr.Header.Set("Content-Type", r.ctype)
	case r.body != "":
		hr.Header.Set("Content-Type", "application/json")
	}
	if r.key != "" {
		hr.Header.Set("Idempotency-Key", r.key)
	}
	res, err := http.DefaultClient.Do(hr)
	if err != nil {
		return resp{}, fmt.Errorf("%s %s: %w", hr.Method, r.path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return resp{}, fmt.Errorf("read body: %w", err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}, nil
}

// decode unmarshals the body into a T after checking the status.
func decode[T any](tb testing.TB, r resp, status int) T {
	tb.Helper()
	if r.status != status {
		tb.Fatalf("status = %d, want %d; body: %s", r.status, status, r.body)
	}
	var v T
	if err := json.Unmarshal(r.body, &v); err != nil {
		tb.Fatalf("decode %s: %v", r.body, err)
	}
	return v
}

type ticket struct {
	ID          string   `json:"id"`
	Key         string   `json:"key"`
	ProjectID   string   `json:"project_id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Status      string   `json:"status"`
	Labels      []string `json:"labels"`
	Reporter    string   `json:"reporter"`
	Assignee    *string  `json:"assignee"`
	Version     int64    `json:"version"`
	CreatedAt   string   `json:"created_at"`
	UpdatedAt   string   `json:"updated_at"`
}

type ticketList struct {
	Tickets    []ticket `json:"tickets"`
	NextCursor string   `json:"next_cursor"`
}

type operation struct {
	OperationID string  `json:"operation_id"`
	Action      string  `json:"action"`
	Status      string  `json:"status"`
	TicketID    string  `json:"ticket_id"`
	Ticket      *ticket `json:"ticket"`
	NextStep    string  `json:"next_step"`
}

type operationList struct {
	Operations []operation `json:"operations"`
	NextCursor string      `json:"next_cursor"`
}

type problem struct {
	Type        string `json:"type"`
	Title       string `json:"title"`
	Status      int    `json:"status"`
	Detail      string `json:"detail"`
	Code        string `json:"code"`
	Retryable   bool   `json:"retryable"`
	OperationID string `json:"operation_id"`
	RequestID   string `json:"request_id"`
	Errors      []struct {
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"errors"`
}

// wantProblem checks that r is a problem document with status and code and
// returns it.
func wantProblem(tb testing.TB, r resp, status int, code string) problem {
	tb.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Errorf("Content-Type = %q, want application/problem+json; body: %s", ct, r.body)
	}
	p := decode[problem](tb, r, status)
	if p.Code != code || p.Status != status || p.Type != "https://ticketd.dev/problems/"+code || p.Title == "" || p.Detail == "" {
		tb.Errorf("problem = %+v, want status %d code %s with type, title and detail", p, status, code)
	}
	return p
}

// wantFieldError checks that p names field in its errors member and that the
// message contains substr.
func wantFieldError(tb testing.TB, p problem, field, substr string) {
	tb.Helper()
	for _, f := range p.Errors {
		if f.Field == field && strings.Contains(f.Message, substr) {
			return
		}
	}
	tb.Errorf("problem errors = %+v, want field %q with message containing %q", p.Errors, field, substr)
}

func ticketBody(title string) string {
	return `{"project_id":"support","title":` + quote(title) + `,"priority":"high","labels":["Hardware","office"]}`
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func newKey() string { return uuid.NewString() }

// createTicket POSTs a ticket with a fresh key and returns it.
func createTicket(tb testing.TB, e *env, tenant, title string) ticket {
	tb.Helper()
	r := do(tb, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: token(tb, tenant, authn.ScopeWrite),
		key: newKey(), body: ticketBody(title)})
	return decode[ticket](tb, r, http.StatusCreated)
}

func count(tb testing.TB, d *db.DB, table, tenant string) int64 {
	tb.Helper()
	return dbtest.CountRows(tb, d, table, tenant)
}

// wantNothingWritten checks that tenant has no tickets and no operations.
func wantNothingWritten(tb testing.TB, d *db.DB, tenant string) {
	tb.Helper()
	if n := count(tb, d, "tickets", tenant); n != 0 {
		tb.Errorf("%d tickets written, want 0", n)
	}
	if n := count(tb, d, "operations", tenant); n != 0 {
		tb.Errorf("%d operations recorded, want 0", n)
	}
}
