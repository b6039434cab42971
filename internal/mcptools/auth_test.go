package mcptools_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/mcptools"
)

// TestTokenVerifierWithMiddleware runs the adapter behind the SDK's own
// middleware, which is how the HTTP transport uses it: bad tokens must be
// 401, never 500, and the handler must find the Principal.
func TestTokenVerifierWithMiddleware(t *testing.T) {
	t.Parallel()
	secret := []byte("0123456789abcdef0123456789abcdef")
	const issuer, audience = "https://issuer.test", "https://tickets.test/mcp"
	v, err := authn.NewVerifier(t.Context(), authn.Config{Issuer: issuer, Audience: audience, HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	mint := func(ttl time.Duration, now time.Time) string {
		tok, err := authn.MintHS256(secret, authn.TokenRequest{
			Issuer: issuer, Audience: audience, Tenant: "acme", Subject: "user-1", Scopes: []string{authn.ScopeRead}, TTL: ttl,
		}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	handler := auth.RequireBearerToken(mcptools.TokenVerifier(v), nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := auth.TokenInfoFromContext(r.Context())
		p, ok := mcptools.PrincipalFrom(info)
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		if info.UserID != p.Subject || !slices.Equal(info.Scopes, p.Scopes) || !info.Expiration.Equal(p.AcceptUntil) {
			http.Error(w, "TokenInfo disagrees with Principal", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte(p.Tenant + "/" + p.Subject))
	}))
	tests := []struct {
		name     string
		token    string
		wantCode int
		wantBody string
	}{
		{name: "Valid", token: mint(time.Hour, time.Now()), wantCode: http.StatusOK, wantBody: "acme/user-1"},
		{name: "ErrExpired", token: mint(time.Minute, time.Now().Add(-2*time.Hour)), wantCode: http.StatusUnauthorized, wantBody: "token is expired"},
		{name: "ErrGarbage", token: "garbage", wantCode: http.StatusUnauthorized, wantBody: "invalid token: malformed token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			req.Header.Set("Authorization", "Bearer "+tt.token)
			rec := httptest.NewRecorder()
			handler.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
			}
		})
	}
}

func TestPrincipalFrom(t *testing.T) {
	t.Parallel()
	p := authn.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{authn.ScopeRead}, Expires: time.Unix(1e9, 0)}
	tests := []struct {
		name   string
		info   *auth.TokenInfo
		wantOK bool
	}{
		{name: "Nil", info: nil},
		{name: "NoExtra", info: &auth.TokenInfo{UserID: "alice"}},
		{name: "ForeignExtra", info: &auth.TokenInfo{Extra: map[string]any{"principal": "alice"}}},
		{name: "Stored", info: &auth.TokenInfo{Extra: map[string]any{"principal": p}}, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := mcptools.PrincipalFrom(tt.info)
			if ok != tt.wantOK || (ok && (got.Tenant != p.Tenant || got.Subject != p.Subject)) {
				t.Errorf("PrincipalFrom = %+v, %v; want ok %v", got, ok, tt.wantOK)
			}
		})
	}
}
