package authn_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
)

func TestMintHS256RoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  authn.Config
		req  authn.TokenRequest
	}{
		{
			name: "DefaultTenantClaim",
			cfg:  authn.Config{HS256Secret: testSecret},
			req:  authn.TokenRequest{Tenant: "acme", Subject: "alice", Scopes: []string{authn.ScopeRead, authn.ScopeWrite}},
		},
		{
			name: "CustomTenantClaim",
			cfg:  authn.Config{HS256Secret: testSecret, TenantClaim: "org"},
			req:  authn.TokenRequest{Tenant: "globex", Subject: "bob", Scopes: []string{authn.ScopeAdmin}, TenantClaim: "org"},
		},
		{
			name: "NoScopes",
			cfg:  authn.Config{HS256Secret: testSecret},
			req:  authn.TokenRequest{Tenant: "acme", Subject: "carol"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Now()
			req := tt.req
			req.Issuer, req.Audience, req.TTL = testIssuer, testAudience, time.Hour
			raw, err := authn.MintHS256(testSecret, req, now)
			if err != nil {
				t.Fatalf("MintHS256: %v", err)
			}
			p, err := newVerifier(t, tt.cfg).Verify(t.Context(), raw)
			if err != nil {
				t.Fatalf("Verify minted token: %v", err)
			}
			want := authn.Principal{Tenant: req.Tenant, Subject: req.Subject, Scopes: req.Scopes, Expires: time.Unix(now.Add(time.Hour).Unix(), 0)}
			if p.Tenant != want.Tenant || p.Subject != want.Subject || !slices.Equal(p.Scopes, want.Scopes) || !p.Expires.Equal(want.Expires) {
				t.Errorf("Verify = %+v, want %+v", p, want)
			}
		})
	}
}

func TestMintHS256Errors(t *testing.T) {
	t.Parallel()
	valid := authn.TokenRequest{Issuer: testIssuer, Audience: testAudience, Tenant: "acme", Subject: "alice", TTL: time.Hour}
	tests := []struct {
		name    string
		secret  []byte
		mutate  func(*authn.TokenRequest)
		wantErr string
	}{
		{name: "ErrShortSecret", secret: testSecret[:16], mutate: func(*authn.TokenRequest) {}, wantErr: "HS256 secret must be at least 32 bytes (got 16)"},
		{name: "ErrIssuerMissing", mutate: func(r *authn.TokenRequest) { r.Issuer = "" }, wantErr: "issuer is required"},
		{name: "ErrAudienceMissing", mutate: func(r *authn.TokenRequest) { r.Audience = "" }, wantErr: "audience is required"},
		{name: "ErrSubjectMissing", mutate: func(r *authn.TokenRequest) { r.Subject = "" }, wantErr: "subject is required"},
		{name: "ErrTenantMissing", mutate: func(r *authn.TokenRequest) { r.Tenant = "" }, wantErr: "tenant"},
		{name: "ErrTenantBadCharacters", mutate: func(r *authn.TokenRequest) { r.Tenant = "acme;drop" }, wantErr: "tenant"},
		{name: "ErrTenantTooLong", mutate: func(r *authn.TokenRequest) { r.Tenant = strings.Repeat("t", 65) }, wantErr: "tenant"},
		{name: "ErrTTLZero", mutate: func(r *authn.TokenRequest) { r.TTL = 0 }, wantErr: "TTL must be positive"},
		{name: "ErrTTLNegative", mutate: func(r *authn.TokenRequest) { r.TTL = -time.Minute }, wantErr: "TTL must be positive"},
		{name: "ErrScopeWithSpace", mutate: func(r *authn.TokenRequest) { r.Scopes = []string{"tickets:read tickets:admin"} }, wantErr: "scope"},
		{name: "ErrScopeEmpty", mutate: func(r *authn.TokenRequest) { r.Scopes = []string{""} }, wantErr: "scope"},
		{name: "ErrTenantClaimClash", mutate: func(r *authn.TokenRequest) { r.TenantClaim = "sub" }, wantErr: `tenant claim "sub" would overwrite a standard claim`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := valid
			tt.mutate(&req)
			secret := tt.secret
			if secret == nil {
				secret = testSecret
			}
			raw, err := authn.MintHS256(secret, req, time.Now())
			if err == nil {
				t.Fatalf("MintHS256 = %q, want error containing %q", raw, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("MintHS256 error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}
