package authn_test

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketd/ticketd/internal/authn"
)

// jwksServer serves a JWK Set that a test can replace, and counts fetches.
type jwksServer struct {
	*httptest.Server
	fetches atomic.Int32
	mu      sync.Mutex
	keys    []map[string]string
}

func newJWKSServer(tb testing.TB, keys ...map[string]string) *jwksServer {
	tb.Helper()
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s.fetches.Add(1)
		s.mu.Lock()
		defer s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(map[string]any{"keys": s.keys}); err != nil {
			tb.Errorf("encode JWKS: %v", err)
		}
	}))
	tb.Cleanup(s.Close)
	return s
}

// rotate replaces the served keys.
func (s *jwksServer) rotate(keys ...map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = keys
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// rsaJWK is pub as a JWK (RFC 7518 §6.3); alg is omitted when empty.
func rsaJWK(kid, alg string, pub *rsa.PublicKey) map[string]string {
	jwk := map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": b64(pub.N.Bytes()), "e": b64(big.NewInt(int64(pub.E)).Bytes())}
	if alg != "" {
		jwk["alg"] = alg
	}
	return jwk
}

// p256JWK is a P-256 key as a JWK (RFC 7518 §6.2), without alg.
func p256JWK(tb testing.TB, kid string, pub *ecdsa.PublicKey) map[string]string {
	tb.Helper()
	ecdhPub, err := pub.ECDH()
	if err != nil {
		tb.Fatalf("convert key: %v", err)
	}
	point := ecdhPub.Bytes() // 0x04 || X || Y
	return map[string]string{"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "x": b64(point[1:33]), "y": b64(point[33:])}
}

func TestVerifyJWKSRotation(t *testing.T) {
	t.Parallel()
	k1, k2 := must(t, rsaKey), must(t, rsaKey2)
	srv := newJWKSServer(t, rsaJWK("k1", "RS256", &k1.PublicKey))
	v := newVerifier(t, authn.Config{JWKSURL: srv.URL})
	if got := srv.fetches.Load(); got != 1 {
		t.Fatalf("fetches after NewVerifier = %d, want 1", got)
	}

	if _, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k1, "k1", validClaims())); err != nil {
		t.Fatalf("Verify k1: %v", err)
	}

	srv.rotate(rsaJWK("k2", "RS256", &k2.PublicKey))
	p, err := v.Verify(t.Context(), sign(t, jwt.SigningMethodRS256, k2, "k2", validClaims()))
	if err != nil {
		t.Fatalf("Verify k2 after rotation: %v", err)
	}
	if p.Tenant != "acme" {
		t.Errorf("Tenant = %q, want acme", p.Tenant)
	}
	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("fetches after unknown kid k2 = %d, want 2", got)
	}

	// k1 was dropped from the set, and the unknown-kid refresh is now rate
	// limited, so both fail at once without another fetch.
	for _, kid := range []string{"k1", "unknown-kid-zz"} {
		raw := sign(t, jwt.SigningMethodRS256, k1, kid, validClaims())
		_, err := v.Verify(t.Context(), raw)
		assertInvalid(t, err, raw, "no key matches the token's kid and algorithm")
		if got := srv.fetches.Load(); got != 2 {
			t.Errorf("fetches after kid %s = %d, want 2 (rate limited)", kid, got)
		}
	}
}

func TestVerifyJWKSUnknownKID(t *testing.T) {
	t.Parallel()
	k1 := must(t, rsaKey)
	srv := newJWKSServer(t, rsaJWK("k1", "RS256", &k1.PublicKey))
	v := newVerifier(t, authn.Config{JWKSURL: srv.URL})

	raw := sign(t, jwt.SigningMethodRS256, must(t, rsaKey2), "unknown-kid-zz", validClaims())
	_, err := v.Verify(t.Context(), raw)
	assertInvalid(t, err, raw, "no key matches the token's kid and algorithm")
	if got := srv.fetches.Load(); got != 2 {
		t.Errorf("fetches = %d, want 2 (the unknown kid triggers one refresh)", got)
	}
}

// TestVerifyJWKSKeyTypes checks that within one JWK Set of mixed key types
// a token is only ever checked against a key of its algorithm's type.
func TestVerifyJWKSKeyTypes(t *testing.T) {
	t.Parallel()
	rsaPriv, p256 := must(t, rsaKey), must(t, p256Key)
	edPriv := must(t, ed25519PK)
	otherP256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := newJWKSServer(t,
		rsaJWK("r1", "", &rsaPriv.PublicKey),
		p256JWK(t, "e1", &p256.PublicKey),
		map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": "d1", "use": "sig", "x": b64(edPriv.Public().(ed25519.PublicKey))},
		// A symmetric key in the set must never verify anything: its
		// bytes are public.
		map[string]string{"kty": "oct", "kid": "s1", "k": b64(testSecret)},
	)
	v := newVerifier(t, authn.Config{JWKSURL: srv.URL})
	tests := []struct {
		name    string
		method  jwt.SigningMethod
		key     any
		kid     string
		wantErr string
	}{
		{name: "RS256ByKID", method: jwt.SigningMethodRS256, key: rsaPriv, kid: "r1"},
		{name: "PS384ByKID", method: jwt.SigningMethodPS384, key: rsaPriv, kid: "r1"},
		{name: "ES256ByKID", method: jwt.SigningMethodES256, key: p256, kid: "e1"},
		{name: "EdDSAByKID", method: jwt.SigningMethodEdDSA, key: edPriv, kid: "d1"},
		{name: "ES256WithoutKID", method: jwt.SigningMethodES256, key: p256},
		{name: "RS256WithoutKID", method: jwt.SigningMethodRS256, key: rsaPriv},
		{name: "ErrES256NamingRSAKey", method: jwt.SigningMethodES256, key: p256, kid: "r1", wantErr: "no key matches the token's kid and algorithm"},
		{name: "ErrRS256NamingEd25519Key", method: jwt.SigningMethodRS256, key: rsaPriv, kid: "d1", wantErr: "no key matches the token's kid and algorithm"},
		{name: "ErrHS256NamingOctKey", method: jwt.SigningMethodHS256, key: testSecret, kid: "s1", wantErr: "signing algorithm HS256 is not accepted"},
		{name: "ErrES256OtherKey", method: jwt.SigningMethodES256, key: otherP256, kid: "e1", wantErr: "signature is invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			raw := sign(t, tt.method, tt.key, tt.kid, validClaims())
			_, err := v.Verify(t.Context(), raw)
			if tt.wantErr != "" {
				assertInvalid(t, err, raw, tt.wantErr)
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
		})
	}
}

func TestNewVerifierJWKSUnavailable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	_, err := authn.NewVerifier(t.Context(), authn.Config{Issuer: testIssuer, Audience: testAudience, JWKSURL: srv.URL})
	if err == nil {
		t.Fatal("NewVerifier succeeded against a JWKS URL answering 404")
	}
}
