package authn_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketd/ticketd/internal/authn"
)

const (
	testIssuer   = "https://issuer.example"
	testAudience = "https://tickets.example/mcp"
)

var testSecret = []byte("0123456789abcdef0123456789abcdef")

// Key generation is slow under -race, so each key type is generated once and
// shared by the parallel tests.
var (
	rsaKey    = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	rsaKey2   = sync.OnceValues(func() (*rsa.PrivateKey, error) { return rsa.GenerateKey(rand.Reader, 2048) })
	p256Key   = sync.OnceValues(func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P256(), rand.Reader) })
	p384Key   = sync.OnceValues(func() (*ecdsa.PrivateKey, error) { return ecdsa.GenerateKey(elliptic.P384(), rand.Reader) })
	ed25519PK = sync.OnceValues(func() (ed25519.PrivateKey, error) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		return priv, err
	})
)

// must unwraps a shared key, failing tb if generating it failed.
func must[K any](tb testing.TB, gen func() (K, error)) K {
	tb.Helper()
	k, err := gen()
	if err != nil {
		tb.Fatalf("generate key: %v", err)
	}
	return k
}

// validClaims returns claims every test verifier accepts; cases mutate a copy.
func validClaims() jwt.MapClaims {
	now := time.Now()
	return jwt.MapClaims{
		"iss":       testIssuer,
		"aud":       testAudience,
		"sub":       "user-1",
		"tenant_id": "acme",
		"scope":     "tickets:read tickets:write",
		"iat":       now.Unix(),
		"exp":       now.Add(time.Hour).Unix(),
	}
}

// sign signs claims with method and key, adding a kid header if kid is set.
func sign(tb testing.TB, method jwt.SigningMethod, key any, kid string, claims jwt.MapClaims) string {
	tb.Helper()
	tok := jwt.NewWithClaims(method, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		tb.Fatalf("sign %s token: %v", method.Alg(), err)
	}
	return s
}

// handToken builds a token with an empty signature by hand, for headers
// such as `alg: none` that the library refuses to sign.
func handToken(tb testing.TB, header map[string]any, claims jwt.MapClaims) string {
	tb.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatalf("marshal: %v", err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return seg(header) + "." + seg(claims) + "."
}

// pemEncode returns pub as a PKIX "PUBLIC KEY" PEM block.
func pemEncode(tb testing.TB, pub crypto.PublicKey) []byte {
	tb.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		tb.Fatalf("marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// newVerifier builds a Verifier for cfg, filling in the test issuer and
// audience when cfg leaves them empty.
func newVerifier(tb testing.TB, cfg authn.Config) *authn.Verifier {
	tb.Helper()
	if cfg.Issuer == "" {
		cfg.Issuer = testIssuer
	}
	if cfg.Audience == "" {
		cfg.Audience = testAudience
	}
	v, err := authn.NewVerifier(tb.Context(), cfg)
	if err != nil {
		tb.Fatalf("NewVerifier: %v", err)
	}
	return v
}

// assertInvalid checks that err is a verification failure for wantReason
// (the SDK's sentinel is the MCP adapter's business, tested there), and that the message does not
// quote any part of the token, because the SDK sends it to the client.
func assertInvalid(tb testing.TB, err error, raw, wantReason string) {
	tb.Helper()
	if err == nil {
		tb.Fatalf("Verify succeeded, want error containing %q", wantReason)
	}
	if !errors.Is(err, authn.ErrInvalidToken) {
		tb.Errorf("error %q does not wrap ErrInvalidToken", err)
	}
	if !strings.Contains(err.Error(), wantReason) {
		tb.Errorf("error %q does not contain %q", err, wantReason)
	}
	for seg := range strings.SplitSeq(raw, ".") {
		if len(seg) >= 8 && strings.Contains(err.Error(), seg) {
			tb.Errorf("error %q quotes the token", err)
		}
	}
}
