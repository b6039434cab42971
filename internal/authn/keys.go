package authn

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"slices"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
)

// The key material a Verifier checks signatures with: an HS256 secret, a
// PEM public key, or a JWK Set kept fresh, each pinned to the algorithms
// its key type may verify.

func checkHS256Secret(secret []byte) error {
	if len(secret) < minHS256Secret {
		return fmt.Errorf("HS256 secret must be at least %d bytes (got %d)", minHS256Secret, len(secret))
	}
	return nil
}

func staticKey(key any) keySource {
	return func(context.Context, *jwt.Token) (any, error) { return key, nil }
}

// jwksKeys loads the JWK Set at rawURL and keeps it fresh until ctx ends.
func jwksKeys(ctx context.Context, rawURL string) (keySource, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("URL %q is not an absolute http(s) URL", rawURL)
	}
	// Fail at start-up rather than serve 401s until the next refresh: an
	// unreachable or wrong URL is almost always a configuration mistake.
	tolerateFirstFetchError := false
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{rawURL}, keyfunc.Override{
		NoErrorReturnFirstHTTPReq: &tolerateFirstFetchError,
		RateLimitWaitMax:          jwksRefreshWait,
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, t *jwt.Token) (any, error) {
		return kf.KeyfuncCtx(ctx)(t)
	}, nil
}

// parsePublicKeyPEM reads the first PEM block of data. Private keys are
// refused on purpose: the server only ever needs the public half.
func parsePublicKeyPEM(data []byte) (any, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block found")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("unsupported PEM block %q (want PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE)", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", block.Type, err)
	}
	if len(algorithmsFor(key)) == 0 {
		return nil, fmt.Errorf("unsupported key %T (want RSA, ECDSA P-256/P-384/P-521 or Ed25519)", key)
	}
	return key, nil
}

// algorithmsFor lists the JWS algorithms key may verify, which is what pins
// a token's alg to the key type and blocks algorithm confusion.
func algorithmsFor(key any) []string {
	switch k := key.(type) {
	case []byte:
		return []string{"HS256"}
	case *rsa.PublicKey:
		return rsaAlgs
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return []string{"ES256"}
		case elliptic.P384():
			return []string{"ES384"}
		case elliptic.P521():
			return []string{"ES512"}
		}
	case ed25519.PublicKey:
		return []string{"EdDSA"}
	}
	return nil
}

// usableKeys narrows key, a single key or a jwt.VerificationKeySet, to the
// keys alg may be verified with. The parser already pins alg to the
// configured key type; this also holds inside a JWKS of mixed key types, so
// an ES256 token is never checked against a P-384 key, for example.
func usableKeys(alg string, key any) (jwt.VerificationKeySet, error) {
	candidates, ok := key.(jwt.VerificationKeySet)
	if !ok {
		candidates.Keys = []jwt.VerificationKey{key}
	}
	var usable jwt.VerificationKeySet
	for _, k := range candidates.Keys {
		if slices.Contains(algorithmsFor(k), alg) {
			usable.Keys = append(usable.Keys, k)
		}
	}
	if len(usable.Keys) == 0 {
		return usable, errNoKey
	}
	return usable, nil
}
