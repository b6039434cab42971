package rest_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// protectedRoutes is every route that needs a token, with a request that
// would otherwise succeed or reach the service.
var protectedRoutes = []struct{ method, path, body string }{
	{http.MethodGet, "/api/v1/projects", ""},
	{http.MethodPost, "/api/v1/projects", `{"id":"ops","key":"OPS","name":"Ops"}`},
	{http.MethodGet, "/api/v1/tickets", ""},
	{http.MethodPost, "/api/v1/tickets", ticketBody("Printer on fire")},
	{http.MethodGet, "/api/v1/tickets/SUP-1", ""},
	{http.MethodGet, "/api/v1/operations", ""},
	{http.MethodGet, "/api/v1/operations/0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c", ""},
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		expired, err := authn.MintHS256(secret, authn.TokenRequest{Issuer: issuer, Audience: audience, Tenant: tenantA,
			Subject: "op", Scopes: []string{authn.ScopeAdmin}, TTL: time.Minute}, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		otherSecret, err := authn.MintHS256([]byte("another-secret-0123456789abcdef-x"), authn.TokenRequest{Issuer: issuer,
			Audience: audience, Tenant: tenantA, Subject: "op", Scopes: []string{authn.ScopeAdmin}, TTL: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}

		for _, rt := range protectedRoutes {
			t.Run("NoTokenIs401On "+rt.method+" "+rt.path, func(t *testing.T) {
				r := do(t, e, req{method: rt.method, path: rt.path, body: rt.body, key: newKey()})
				wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
				want := `Bearer resource_metadata="` + resourceMetadata + `", scope="tickets:read tickets:write"`
				if got := r.header.Get("WWW-Authenticate"); got != want {
					t.Errorf("WWW-Authenticate = %q, want %q", got, want)
				}
			})
		}
		for name, h := range map[string]string{
			"Garbage":      "Bearer not-a-jwt",
			"Expired":      "Bearer " + expired,
			"WrongSecret":  "Bearer " + otherSecret,
			"LowerScheme":  "bearer not-a-jwt",
			"EmptyBearer":  "Bearer ",
			"BasicScheme":  "Basic dXNlcjpwYXNz",
			"TokenNoSpace": "Bearer",
		} {
			t.Run("BadToken"+name+"Is401", func(t *testing.T) {
				r := do(t, e, req{path: "/api/v1/tickets", headers: http.Header{"Authorization": {h}}})
				wantProblem(t, r, http.StatusUnauthorized, "unauthenticated")
				got := r.header.Get("WWW-Authenticate")
				if !strings.HasPrefix(got, `Bearer resource_metadata="`+resourceMetadata+`"`) {
					t.Errorf("WWW-Authenticate = %q, want the resource metadata challenge", got)
				}
				tokenGiven := strings.HasPrefix(strings.ToLower(h), "bearer ") && strings.TrimSpace(h[7:]) != ""
				if strings.Contains(got, `error="invalid_token"`) != tokenGiven {
					t.Errorf("WWW-Authenticate = %q; error=\"invalid_token\" wanted exactly when a token was given (%v)", got, tokenGiven)
				}
			})
		}
		t.Run("OpenAPINeedsNoToken", func(t *testing.T) {
			r := do(t, e, req{path: "/api/v1/openapi.json"})
			if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q", r.status, r.header.Get("Content-Type"))
			}
		})
		t.Run("LogsNeverHoldTheToken", func(t *testing.T) {
			tok := token(t, tenantA, authn.ScopeRead)
			r := do(t, e, req{path: "/api/v1/tickets", token: tok, headers: http.Header{"X-Request-Id": {"trace-42"}}})
			if got := r.header.Get("X-Request-ID"); got != "trace-42" {
				t.Errorf("X-Request-ID = %q, want the caller's trace-42", got)
			}
			do(t, e, req{path: "/api/v1/tickets", headers: http.Header{"Authorization": {"Bearer " + tok + "x"}}})
			logs := e.logs.String()
			if strings.Contains(logs, tok) {
				t.Error("a request log line contains the bearer token")
			}
			if !strings.Contains(logs, `"route":"/api/v1/tickets"`) || !strings.Contains(logs, `"tenant":"acme"`) ||
				!strings.Contains(logs, `"request_id":"trace-42"`) {
				t.Errorf("logs lack the route or tenant: %s", logs)
			}
		})
	})
}

func TestScopes(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newEnv(t, d)
		read := token(t, tenantA, authn.ScopeRead)
		write := token(t, tenantA, authn.ScopeWrite)

		t.Run("ReadOnlyTokenCannotCreateATicket", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: read, key: newKey(), body: ticketBody("x")})
			p := wantProblem(t, r, http.StatusForbidden, "forbidden")
			if !strings.Contains(p.Detail, authn.ScopeWrite) {
				t.Errorf("detail %q does not name %s", p.Detail, authn.ScopeWrite)
			}
			if got := r.header.Get("WWW-Authenticate"); !strings.Contains(got, `error="insufficient_scope"`) ||
				!strings.Contains(got, `scope="tickets:write"`) {
				t.Errorf("WWW-Authenticate = %q, want insufficient_scope naming tickets:write", got)
			}
			wantNothingWritten(t, d, tenantA)
		})
		t.Run("WriteTokenCannotCreateAProject", func(t *testing.T) {
			r := do(t, e, req{method: http.MethodPost, path: "/api/v1/projects", token: write, body: `{"id":"ops","key":"OPS","name":"Ops"}`})
			p := wantProblem(t, r, http.StatusForbidden, "forbidden")
			if !strings.Contains(p.Detail, authn.ScopeAdmin) {
				t.Errorf("detail %q does not name %s", p.Detail, authn.ScopeAdmin)
			}
			if n := count(t, d, "projects", tenantA); n != 1 {
				t.Errorf("%d projects, want only the seeded one", n)
			}
		})
		t.Run("WriteTokenCannotRead", func(t *testing.T) {
			for _, path := range []string{"/api/v1/tickets", "/api/v1/projects", "/api/v1/operations", "/api/v1/tickets/SUP-1"} {
				wantProblem(t, do(t, e, req{path: path, token: write}), http.StatusForbidden, "forbidden")
			}
		})
		t.Run("AdminTokenCanReadAndWrite", func(t *testing.T) {
			tok := admin(t, tenantA)
			decode[ticket](t, do(t, e, req{method: http.MethodPost, path: "/api/v1/tickets", token: tok, key: newKey(),
				body: ticketBody("by admin")}), http.StatusCreated)
			decode[ticketList](t, do(t, e, req{path: "/api/v1/tickets", token: tok}), http.StatusOK)
		})
	})
}
