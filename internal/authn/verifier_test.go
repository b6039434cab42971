package authn_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketd/ticketd/internal/authn"
)

func TestVerifyClaims(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, authn.Config{HS256Secret: testSecret})
	now := time.Now()
	tests := []struct {
		name   string
		mutate func(jwt.MapClaims)
		want   authn.Principal // compared when wantErr is empty
		// wantErr is a substring of the rejection reason; empty means valid.
		wantErr string
	}{
		{
			name:   "Valid",
			mutate: func(jwt.MapClaims) {},
			want:   authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{name: "ErrExpMissing", mutate: func(c jwt.MapClaims) { delete(c, "exp") }, wantErr: "exp claim is required"},
		{name: "ErrExpired", mutate: func(c jwt.MapClaims) { c["exp"] = now.Add(-2 * time.Minute).Unix() }, wantErr: "token is expired"},
		{
			name:   "ExpiredWithinLeeway",
			mutate: func(c jwt.MapClaims) { c["exp"] = now.Add(-10 * time.Second).Unix() },
			want:   authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{name: "ErrExpNotNumber", mutate: func(c jwt.MapClaims) { c["exp"] = "tomorrow" }, wantErr: "exp is invalid"},
		{name: "ErrNotYetValid", mutate: func(c jwt.MapClaims) { c["nbf"] = now.Add(5 * time.Minute).Unix() }, wantErr: "token is not valid yet"},
		{name: "ErrIssuedInFuture", mutate: func(c jwt.MapClaims) { c["iat"] = now.Add(5 * time.Minute).Unix() }, wantErr: "token used before issued"},
		{name: "ErrWrongIssuer", mutate: func(c jwt.MapClaims) { c["iss"] = "https://evil.example" }, wantErr: "token has invalid issuer"},
		{name: "ErrIssuerMissing", mutate: func(c jwt.MapClaims) { delete(c, "iss") }, wantErr: "iss claim is required"},
		{name: "ErrWrongAudience", mutate: func(c jwt.MapClaims) { c["aud"] = "https://other.example/mcp" }, wantErr: "aud claim does not name this resource"},
		{name: "ErrAudienceOtherPath", mutate: func(c jwt.MapClaims) { c["aud"] = testAudience + "/x" }, wantErr: "aud claim does not name this resource"},
		{name: "ErrAudienceMissing", mutate: func(c jwt.MapClaims) { delete(c, "aud") }, wantErr: "aud claim missing or malformed"},
		{name: "ErrAudienceNotString", mutate: func(c jwt.MapClaims) { c["aud"] = 42 }, wantErr: "aud claim missing or malformed"},
		{
			name:   "AudienceTrailingSlash",
			mutate: func(c jwt.MapClaims) { c["aud"] = testAudience + "/" },
			want:   authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{
			name:   "AudienceInArray",
			mutate: func(c jwt.MapClaims) { c["aud"] = []string{"https://other.example", testAudience} },
			want:   authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{name: "ErrSubjectMissing", mutate: func(c jwt.MapClaims) { delete(c, "sub") }, wantErr: "sub claim missing or malformed"},
		{name: "ErrSubjectEmpty", mutate: func(c jwt.MapClaims) { c["sub"] = "" }, wantErr: "sub claim missing or malformed"},
		{name: "ErrTenantMissing", mutate: func(c jwt.MapClaims) { delete(c, "tenant_id") }, wantErr: `tenant claim "tenant_id" missing or malformed`},
		{name: "ErrTenantEmpty", mutate: func(c jwt.MapClaims) { c["tenant_id"] = "" }, wantErr: "tenant claim"},
		{name: "ErrTenantNotString", mutate: func(c jwt.MapClaims) { c["tenant_id"] = 7 }, wantErr: "tenant claim"},
		{name: "ErrTenantBadCharacters", mutate: func(c jwt.MapClaims) { c["tenant_id"] = "acme/../other" }, wantErr: "tenant claim"},
		{name: "ErrTenantSpace", mutate: func(c jwt.MapClaims) { c["tenant_id"] = "acme corp" }, wantErr: "tenant claim"},
		{name: "ErrTenantNonASCII", mutate: func(c jwt.MapClaims) { c["tenant_id"] = "acmé" }, wantErr: "tenant claim"},
		{name: "ErrTenantTooLong", mutate: func(c jwt.MapClaims) { c["tenant_id"] = strings.Repeat("a", 65) }, wantErr: "tenant claim"},
		{
			name:   "TenantAtMaxLength",
			mutate: func(c jwt.MapClaims) { c["tenant_id"] = strings.Repeat("a", 64) },
			want:   authn.Principal{Tenant: strings.Repeat("a", 64), Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{
			name:   "TenantAllAllowedCharacters",
			mutate: func(c jwt.MapClaims) { c["tenant_id"] = "Acme-01_eu.west" },
			want:   authn.Principal{Tenant: "Acme-01_eu.west", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:write"}},
		},
		{
			name:   "ScopeString",
			mutate: func(c jwt.MapClaims) { c["scope"] = " tickets:admin  custom:x " },
			want:   authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:admin", "custom:x"}},
		},
		{
			name: "ScpArray",
			mutate: func(c jwt.MapClaims) {
				delete(c, "scope")
				c["scp"] = []string{"tickets:read", "tickets:admin"}
			},
			want: authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read", "tickets:admin"}},
		},
		{
			name: "ScpString",
			mutate: func(c jwt.MapClaims) {
				delete(c, "scope")
				c["scp"] = "tickets:write"
			},
			want: authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:write"}},
		},
		{
			name: "ScopeWinsOverScp",
			mutate: func(c jwt.MapClaims) {
				c["scope"] = "tickets:read"
				c["scp"] = []string{"tickets:admin"}
			},
			want: authn.Principal{Tenant: "acme", Subject: "user-1", Scopes: []string{"tickets:read"}},
		},
		{
			name:   "NoScopes",
			mutate: func(c jwt.MapClaims) { delete(c, "scope") },
			want:   authn.Principal{Tenant: "acme", Subject: "user-1"},
		},
		{name: "ErrScopeNotString", mutate: func(c jwt.MapClaims) { c["scope"] = 1 }, wantErr: "scope claim malformed"},
		{
			name: "ErrScpArrayOfNumbers",
			mutate: func(c jwt.MapClaims) {
				delete(c, "scope")
				c["scp"] = []int{1, 2}
			},
			wantErr: "scp claim malformed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			claims := validClaims()
			tt.mutate(claims)
			raw := sign(t, jwt.SigningMethodHS256, testSecret, "", claims)
			got, err := v.Verify(t.Context(), raw)
			if tt.wantErr != "" {
				assertInvalid(t, err, raw, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if got.Tenant != tt.want.Tenant || got.Subject != tt.want.Subject || !slices.Equal(got.Scopes, tt.want.Scopes) {
				t.Errorf("Verify = %+v, want %+v", got, tt.want)
			}
			if exp := time.Unix(claims["exp"].(int64), 0); !got.Expires.Equal(exp) {
				t.Errorf("Expires = %v, want %v", got.Expires, exp)
			}
		})
	}
}

func TestVerifyLeeway(t *testing.T) {
	t.Parallel()
	claims := validClaims()
	claims["exp"] = time.Now().Add(-10 * time.Second).Unix()
	raw := sign(t, jwt.SigningMethodHS256, testSecret, "", claims)

	strict := newVerifier(t, authn.Config{HS256Secret: testSecret, Leeway: time.Second})
	_, err := strict.Verify(t.Context(), raw)
	assertInvalid(t, err, raw, "token is expired")

	lenient := newVerifier(t, authn.Config{HS256Secret: testSecret, Leeway: time.Minute})
	if _, err := lenient.Verify(t.Context(), raw); err != nil {
		t.Errorf("Verify with 1m leeway: %v", err)
	}
}

func TestVerifyCustomTenantClaim(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, authn.Config{HS256Secret: testSecret, TenantClaim: "https://ticketd.example/org"})
	claims := validClaims()
	claims["https://ticketd.example/org"] = "globex"
	raw := sign(t, jwt.SigningMethodHS256, testSecret, "", claims)
	p, err := v.Verify(t.Context(), raw)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if p.Tenant != "globex" {
		t.Errorf("Tenant = %q, want %q (tenant_id must be ignored)", p.Tenant, "globex")
	}

	delete(claims, "https://ticketd.example/org")
	raw = sign(t, jwt.SigningMethodHS256, testSecret, "", claims)
	_, err = v.Verify(t.Context(), raw)
	assertInvalid(t, err, raw, `tenant claim "https://ticketd.example/org" missing or malformed`)
}

// TestVerifySigningKeys checks each key source accepts exactly the
// algorithms its key type allows, including the classic attacks.
func TestVerifySigningKeys(t *testing.T) {
	t.Parallel()
	rsaPriv := must(t, rsaKey)
	p256 := must(t, p256Key)
	p384 := must(t, p384Key)
	edPriv := must(t, ed25519PK)
	rsaPEM := pemEncode(t, &rsaPriv.PublicKey)
	p256PEM := pemEncode(t, &p256.PublicKey)
	edPEM := pemEncode(t, edPriv.Public())
	rsaPKCS1PEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&rsaPriv.PublicKey)})

	tests := []struct {
		name    string
		cfg     authn.Config
		method  jwt.SigningMethod
		key     any
		wantErr string
	}{
		{name: "HS256", cfg: authn.Config{HS256Secret: testSecret}, method: jwt.SigningMethodHS256, key: testSecret},
		{name: "ErrHS256WrongSecret", cfg: authn.Config{HS256Secret: testSecret}, method: jwt.SigningMethodHS256, key: []byte(strings.Repeat("x", 32)), wantErr: "signature is invalid"},
		{name: "ErrHS384AgainstSecret", cfg: authn.Config{HS256Secret: testSecret}, method: jwt.SigningMethodHS384, key: testSecret, wantErr: "signing algorithm HS384 is not accepted"},
		{name: "ErrRS256AgainstSecret", cfg: authn.Config{HS256Secret: testSecret}, method: jwt.SigningMethodRS256, key: rsaPriv, wantErr: "signing algorithm RS256 is not accepted"},
		{name: "RS256", cfg: authn.Config{PublicKeyPEM: rsaPEM}, method: jwt.SigningMethodRS256, key: rsaPriv},
		{name: "RS512", cfg: authn.Config{PublicKeyPEM: rsaPEM}, method: jwt.SigningMethodRS512, key: rsaPriv},
		{name: "PS256", cfg: authn.Config{PublicKeyPEM: rsaPEM}, method: jwt.SigningMethodPS256, key: rsaPriv},
		{name: "RS256PKCS1PEM", cfg: authn.Config{PublicKeyPEM: rsaPKCS1PEM}, method: jwt.SigningMethodRS256, key: rsaPriv},
		{name: "RS256Certificate", cfg: authn.Config{PublicKeyPEM: selfSignedCert(t, rsaPriv)}, method: jwt.SigningMethodRS256, key: rsaPriv},
		{name: "ErrRS256OtherKey", cfg: authn.Config{PublicKeyPEM: rsaPEM}, method: jwt.SigningMethodRS256, key: must(t, rsaKey2), wantErr: "signature is invalid"},
		// Algorithm confusion: the public key's PEM bytes are public, so an
		// attacker can use them as an HMAC secret.
		{name: "ErrHS256WithRSAPublicPEM", cfg: authn.Config{PublicKeyPEM: rsaPEM}, method: jwt.SigningMethodHS256, key: rsaPEM, wantErr: "signing algorithm HS256 is not accepted"},
		{name: "ErrHS256WithECPublicPEM", cfg: authn.Config{PublicKeyPEM: p256PEM}, method: jwt.SigningMethodHS256, key: p256PEM, wantErr: "signing algorithm HS256 is not accepted"},
		{name: "ErrHS256WithEdPublicPEM", cfg: authn.Config{PublicKeyPEM: edPEM}, method: jwt.SigningMethodHS256, key: edPEM, wantErr: "signing algorithm HS256 is not accepted"},
		{name: "ES256", cfg: authn.Config{PublicKeyPEM: p256PEM}, method: jwt.SigningMethodES256, key: p256},
		{name: "ES384", cfg: authn.Config{PublicKeyPEM: pemEncode(t, &p384.PublicKey)}, method: jwt.SigningMethodES384, key: p384},
		{name: "ErrES384AgainstP256", cfg: authn.Config{PublicKeyPEM: p256PEM}, method: jwt.SigningMethodES384, key: p384, wantErr: "signing algorithm ES384 is not accepted"},
		{name: "ErrRS256AgainstEC", cfg: authn.Config{PublicKeyPEM: p256PEM}, method: jwt.SigningMethodRS256, key: rsaPriv, wantErr: "signing algorithm RS256 is not accepted"},
		{name: "EdDSA", cfg: authn.Config{PublicKeyPEM: edPEM}, method: jwt.SigningMethodEdDSA, key: edPriv},
		{name: "ErrES256AgainstEd25519", cfg: authn.Config{PublicKeyPEM: edPEM}, method: jwt.SigningMethodES256, key: p256, wantErr: "signing algorithm ES256 is not accepted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := newVerifier(t, tt.cfg)
			raw := sign(t, tt.method, tt.key, "", validClaims())
			p, err := v.Verify(t.Context(), raw)
			if tt.wantErr != "" {
				assertInvalid(t, err, raw, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if p.Tenant != "acme" || p.Subject != "user-1" {
				t.Errorf("Verify = %+v, want tenant acme, subject user-1", p)
			}
		})
	}
}

func TestVerifyMalformed(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, authn.Config{HS256Secret: testSecret})
	valid := sign(t, jwt.SigningMethodHS256, testSecret, "", validClaims())
	parts := strings.Split(valid, ".")
	tests := []struct {
		name    string
		raw     string
		wantErr string
	}{
		{name: "ErrAlgNone", raw: handToken(t, map[string]any{"alg": "none", "typ": "JWT"}, validClaims()), wantErr: "signing algorithm none is not accepted"},
		{name: "ErrAlgUnknown", raw: handToken(t, map[string]any{"alg": "HS1024"}, validClaims()), wantErr: "missing or unknown signing algorithm"},
		{name: "ErrAlgMissing", raw: handToken(t, map[string]any{"typ": "JWT"}, validClaims()), wantErr: "missing or unknown signing algorithm"},
		{name: "ErrEmpty", raw: "", wantErr: "malformed token"},
		{name: "ErrTwoSegments", raw: parts[0] + "." + parts[1], wantErr: "malformed token"},
		{name: "ErrFourSegments", raw: valid + ".x", wantErr: "malformed token"},
		{name: "ErrHeaderNotJSON", raw: "bm90IGpzb24." + parts[1] + "." + parts[2], wantErr: "malformed token"},
		{name: "ErrSignatureEmpty", raw: parts[0] + "." + parts[1] + ".", wantErr: "signature is invalid"},
		{name: "ErrSignaturePadded", raw: valid + "=", wantErr: "malformed token"},
		// The last character of a 32-byte signature carries two unused
		// bits; lenient base64 would accept this second spelling.
		{name: "ErrSignatureNonCanonical", raw: flipUnusedBits(t, valid), wantErr: "malformed token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(t.Context(), tt.raw)
			assertInvalid(t, err, tt.raw, tt.wantErr)
		})
	}
}

// flipUnusedBits changes the last character of raw's signature without
// changing the bytes a lenient base64 decoder returns.
func flipUnusedBits(tb testing.TB, raw string) string {
	tb.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	i := strings.IndexByte(alphabet, raw[len(raw)-1])
	flipped := raw[:len(raw)-1] + string(alphabet[i^1])
	a, errA := base64.RawURLEncoding.DecodeString(raw[strings.LastIndexByte(raw, '.')+1:])
	b, errB := base64.RawURLEncoding.DecodeString(flipped[strings.LastIndexByte(flipped, '.')+1:])
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		tb.Fatalf("flipped signature decodes differently (%v, %v)", errA, errB)
	}
	return flipped
}

func TestNewVerifierConfigErrors(t *testing.T) {
	t.Parallel()
	rsaPEM := pemEncode(t, &must(t, rsaKey).PublicKey)
	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(must(t, p256Key))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     authn.Config
		wantErr string
	}{
		{name: "ErrNoKeySource", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience}, wantErr: "no key source: set one of TICKETD_JWT_JWKS_URL, TICKETD_JWT_PUBLIC_KEY_FILE, TICKETD_JWT_HS256_SECRET"},
		{name: "ErrTwoKeySources", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, HS256Secret: testSecret, PublicKeyPEM: rsaPEM}, wantErr: "more than one key source"},
		{name: "ErrThreeKeySources", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, HS256Secret: testSecret, PublicKeyPEM: rsaPEM, JWKSURL: "https://issuer.example/jwks"}, wantErr: "more than one key source"},
		{name: "ErrShortSecret", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, HS256Secret: testSecret[:31]}, wantErr: "HS256 secret must be at least 32 bytes (got 31)"},
		{name: "ErrIssuerMissing", cfg: authn.Config{Audience: testAudience, HS256Secret: testSecret}, wantErr: "issuer is required"},
		{name: "ErrAudienceMissing", cfg: authn.Config{Issuer: testIssuer, HS256Secret: testSecret}, wantErr: "audience is required"},
		{name: "ErrNegativeLeeway", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, HS256Secret: testSecret, Leeway: -time.Second}, wantErr: "leeway must not be negative"},
		{name: "ErrNotPEM", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyPEM: []byte("not a key")}, wantErr: "public key: no PEM block found"},
		{name: "ErrCorruptPEM", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: []byte("junk")})}, wantErr: "public key: parse PUBLIC KEY"},
		{name: "ErrPrivateKeyPEM", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER})}, wantErr: `unsupported PEM block "PRIVATE KEY"`},
		{name: "ErrUnsupportedCurve", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, PublicKeyPEM: pemEncode(t, &p224.PublicKey)}, wantErr: "unsupported key"},
		{name: "ErrJWKSURLRelative", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, JWKSURL: "/jwks.json"}, wantErr: "not an absolute http(s) URL"},
		{name: "ErrJWKSURLScheme", cfg: authn.Config{Issuer: testIssuer, Audience: testAudience, JWKSURL: "file:///etc/jwks.json"}, wantErr: "not an absolute http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := authn.NewVerifier(t.Context(), tt.cfg)
			if err == nil {
				t.Fatalf("NewVerifier = %v, want error containing %q", v, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewVerifier error %q does not contain %q", err, tt.wantErr)
			}
		})
	}
}

// selfSignedCert returns a PEM certificate for key's public half.
func selfSignedCert(tb testing.TB, key crypto.Signer) []byte {
	tb.Helper()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "issuer.example"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		tb.Fatalf("create certificate: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestVerifyCriticalHeader checks RFC 7515 §4.1.11: a correctly signed token
// naming any critical header extension is refused, since ticketd implements
// none of them and must not guess what the issuer meant.
func TestVerifyCriticalHeader(t *testing.T) {
	t.Parallel()
	v := newVerifier(t, authn.Config{HS256Secret: testSecret})
	for name, crit := range map[string]any{
		"ErrUnknownExtension": []string{"x-ticketd-unknown"},
		"ErrRegisteredName":   []string{"exp"},
		"ErrEmptyList":        []string{},
		"ErrNotAList":         "x-ticketd-unknown",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims())
			tok.Header["crit"] = crit
			tok.Header["x-ticketd-unknown"] = true
			raw, err := tok.SignedString(testSecret)
			if err != nil {
				t.Fatalf("sign: %v", err)
			}
			_, err = v.Verify(t.Context(), raw)
			assertInvalid(t, err, raw, "critical header extensions (crit)")
		})
	}
	// The same token without crit verifies, so the rejection above is the
	// crit header's doing.
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, validClaims())
	tok.Header["x-ticketd-unknown"] = true
	raw, err := tok.SignedString(testSecret)
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	if _, err := v.Verify(t.Context(), raw); err != nil {
		t.Fatalf("Verify without crit: %v", err)
	}
}
