package authn

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrInvalidToken is wrapped by every error Verify returns. The MCP adapter
// (mcptools.TokenVerifier) makes it match the SDK's own sentinel too, so the
// SDK answers 401 rather than 500.
var ErrInvalidToken = errors.New("invalid token")

// Errors that transports raise themselves, before the service runs. They are
// authorisation outcomes, so they live beside the Principal they judge.
var (
	// ErrForbidden: the caller's token lacks the scope the action needs.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthenticated: no valid token came with the call.
	ErrUnauthenticated = errors.New("unauthenticated")
)

const (
	defaultTenantClaim = "tenant_id"
	defaultLeeway      = 30 * time.Second
	// minHS256Secret is the HS256 key size RFC 7518 §3.2 requires: a key
	// at least as long as the hash output.
	minHS256Secret = 32
	maxTenantLen   = 64
	// jwksRefreshWait bounds how long a request carrying an unknown kid waits
	// for the rate-limited JWKS refresh (limiter wait plus fetch). keyfunc's
	// default of a minute would hold requests open that long while the
	// limiter is empty.
	jwksRefreshWait = 5 * time.Second
)

var (
	rsaAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"}
	// jwksAlgs are all asymmetric algorithms and never HS256, so a symmetric
	// ("oct") key published in a JWKS can never verify a token.
	jwksAlgs = append(slices.Clone(rsaAlgs), "ES256", "ES384", "ES512", "EdDSA")
)

// errNoKey marks a key lookup that found nothing usable for the token, so
// the rejection can say so instead of echoing the library's text, which
// quotes the token's kid.
var errNoKey = errors.New("no key matches the token's kid and algorithm")

// errCritical marks a token whose JWS header has a crit parameter. RFC 7515
// §4.1.11 requires rejecting a token naming a critical extension the
// recipient does not understand, and ticketd understands none, so any crit
// (even an empty or malformed one, which the RFC also forbids) is refused.
var errCritical = errors.New("token names critical header extensions (crit), none of which are supported")

// Config says which tokens a Verifier accepts. Exactly one of HS256Secret,
// PublicKeyPEM and JWKSURL must be set.
type Config struct {
	// Issuer must equal the token's iss claim. Required.
	Issuer string
	// Audience is this server's MCP resource URL (RFC 8707). One of the
	// token's aud values must match it, ignoring one trailing slash as
	// matchesResource does, because identity providers differ in
	// whether they keep it. Required.
	Audience string
	// TenantClaim names the claim carrying the tenant; "tenant_id" if empty.
	TenantClaim string
	// Leeway absorbs clock skew on exp, nbf and iat; 30s if zero.
	Leeway time.Duration

	// HS256Secret is a shared secret of at least 32 bytes. Tokens must use
	// HS256.
	HS256Secret []byte
	// PublicKeyPEM holds one PEM block: "PUBLIC KEY" (PKIX), "RSA PUBLIC KEY"
	// (PKCS #1) or "CERTIFICATE". The key type pins the algorithms accepted:
	// RS256/384/512 and PS256/384/512 for RSA, the one ES algorithm matching
	// an ECDSA key's curve, EdDSA for Ed25519.
	PublicKeyPEM []byte
	// JWKSURL is an identity provider's JWK Set. It is fetched once in
	// NewVerifier, refreshed hourly in the background, and refreshed at most
	// every five minutes when a token names an unknown kid, so key rotation
	// needs no restart.
	JWKSURL string
}

// keySource returns the candidate verification key for a token: a single
// key or a jwt.VerificationKeySet.
type keySource func(ctx context.Context, t *jwt.Token) (any, error)

// Verifier checks bearer JWTs and turns them into Principals. It is safe for
// concurrent use.
type Verifier struct {
	parser      *jwt.Parser
	algs        []string
	keys        keySource
	audience    string
	tenantClaim string
	leeway      time.Duration
}

// NewVerifier checks cfg and loads its key, so a misconfiguration stops
// start-up with a message naming what to fix instead of turning into 401s.
// For a JWKS the first fetch happens here and must succeed; ctx bounds the
// lifetime of the background refresh goroutine, so cancel it on shutdown.
func NewVerifier(ctx context.Context, cfg Config) (*Verifier, error) {
	sources := 0
	for _, set := range []bool{len(cfg.HS256Secret) > 0, len(cfg.PublicKeyPEM) > 0, cfg.JWKSURL != ""} {
		if set {
			sources++
		}
	}
	switch {
	case sources == 0:
		return nil, errors.New("no key source: set one of TICKETD_JWT_JWKS_URL, TICKETD_JWT_PUBLIC_KEY_FILE, TICKETD_JWT_HS256_SECRET")
	case sources > 1:
		return nil, errors.New("more than one key source: set only one of TICKETD_JWT_JWKS_URL, TICKETD_JWT_PUBLIC_KEY_FILE, TICKETD_JWT_HS256_SECRET")
	case cfg.Issuer == "":
		return nil, errors.New("issuer is required (TICKETD_JWT_ISSUER)")
	case cfg.Audience == "":
		return nil, errors.New("audience is required (TICKETD_JWT_AUDIENCE)")
	case cfg.Leeway < 0:
		return nil, fmt.Errorf("leeway must not be negative (got %s)", cfg.Leeway)
	}

	v := &Verifier{audience: cfg.Audience, tenantClaim: cmp.Or(cfg.TenantClaim, defaultTenantClaim), leeway: cmp.Or(cfg.Leeway, defaultLeeway)}
	switch {
	case len(cfg.HS256Secret) > 0:
		if err := checkHS256Secret(cfg.HS256Secret); err != nil {
			return nil, err
		}
		v.algs = []string{"HS256"}
		v.keys = staticKey(slices.Clone(cfg.HS256Secret))
	case len(cfg.PublicKeyPEM) > 0:
		key, err := parsePublicKeyPEM(cfg.PublicKeyPEM)
		if err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		v.algs = algorithmsFor(key)
		v.keys = staticKey(key)
	default:
		keys, err := jwksKeys(ctx, cfg.JWKSURL)
		if err != nil {
			return nil, fmt.Errorf("JWKS: %w", err)
		}
		v.algs = jwksAlgs
		v.keys = keys
	}
	v.parser = jwt.NewParser(
		jwt.WithValidMethods(v.algs),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.leeway),
		// Strict base64 rejects non-canonical encodings, so a token has
		// exactly one accepted spelling.
		jwt.WithStrictDecoding(),
	)
	return v, nil
}

// Verify checks raw's signature, algorithm, exp, nbf, iat, iss and aud and
// returns the Principal it carries. Every error wraps ErrInvalidToken and
// gives a short reason that never quotes the token, because the SDK sends
// the message to the client. ctx bounds a JWKS refresh triggered by an
// unknown kid.
func (v *Verifier) Verify(ctx context.Context, raw string) (Principal, error) {
	claims := jwt.MapClaims{}
	token, err := v.parser.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		// Checked before the key lookup so a crit token cannot trigger a
		// JWKS refresh.
		if _, ok := t.Header["crit"]; ok {
			return nil, errCritical
		}
		key, err := v.keys(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errNoKey, err)
		}
		return usableKeys(t.Method.Alg(), key)
	})
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %s", ErrInvalidToken, v.reason(token, err))
	}
	return v.principal(claims)
}

// reason names why the parser rejected a token, using its sentinels rather
// than its text where the text would quote parts of the token.
func (v *Verifier) reason(token *jwt.Token, err error) string {
	switch {
	case token != nil && token.Method != nil && !slices.Contains(v.algs, token.Method.Alg()):
		// Alg is one of the library's registered names, not token text.
		return fmt.Sprintf("signing algorithm %s is not accepted for this key", token.Method.Alg())
	case errors.Is(err, errCritical):
		return errCritical.Error()
	case errors.Is(err, errNoKey):
		return errNoKey.Error()
	case errors.Is(err, jwt.ErrTokenInvalidClaims):
		// Claim validation messages are fixed strings such as "token is
		// expired"; keep them, they are the most useful part.
		return err.Error()
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "malformed token"
	case errors.Is(err, jwt.ErrTokenUnverifiable):
		return "missing or unknown signing algorithm"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return "signature is invalid"
	default:
		return "verification failed"
	}
}

// principal checks the claims the parser does not know about (aud semantics,
// sub, tenant, scopes) and builds the Principal.
func (v *Verifier) principal(claims jwt.MapClaims) (Principal, error) {
	aud, err := claims.GetAudience()
	switch {
	case err != nil || len(aud) == 0:
		return Principal{}, fmt.Errorf("%w: aud claim missing or malformed", ErrInvalidToken)
	case !matchesResource(aud, v.audience):
		return Principal{}, fmt.Errorf("%w: aud claim does not name this resource", ErrInvalidToken)
	}
	sub, err := claims.GetSubject()
	if err != nil || sub == "" {
		return Principal{}, fmt.Errorf("%w: sub claim missing or malformed", ErrInvalidToken)
	}
	tenant, _ := claims[v.tenantClaim].(string)
	if !ValidTenant(tenant) {
		return Principal{}, fmt.Errorf("%w: tenant claim %q missing or malformed", ErrInvalidToken, v.tenantClaim)
	}
	scopes, err := scopesFrom(claims)
	if err != nil {
		return Principal{}, fmt.Errorf("%w: %w", ErrInvalidToken, err)
	}
	// The parser has already required a well-formed exp.
	exp, _ := claims.GetExpirationTime()
	return Principal{Tenant: tenant, Subject: sub, Scopes: scopes, Expires: exp.Time, AcceptUntil: exp.Add(v.leeway)}, nil
}

// scopesFrom reads "scope" (RFC 9068) or, if absent, "scp" (used by Azure AD
// as a string and by Okta as an array). Either may be a space-separated
// string or an array of strings.
func scopesFrom(claims jwt.MapClaims) ([]string, error) {
	name := "scope"
	raw, ok := claims[name]
	if !ok {
		name = "scp"
		if raw, ok = claims[name]; !ok {
			return nil, nil
		}
	}
	switch raw := raw.(type) {
	case string:
		return strings.Fields(raw), nil
	case []any:
		var scopes []string
		for _, s := range raw {
			s, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("%s claim malformed", name)
			}
			scopes = append(scopes, strings.Fields(s)...)
		}
		return scopes, nil
	default:
		return nil, fmt.Errorf("%s claim malformed", name)
	}
}

// ValidTenant reports whether t is safe to use as a tenant ID (exported so
// the CLI holds tenants it writes to the same rule as tokens). The tenant is
// written to logs and stored in every row, so it is held to 1–64 characters
// of [A-Za-z0-9._-] rather than trusted as arbitrary issuer text.
func ValidTenant(t string) bool {
	if t == "" || len(t) > maxTenantLen {
		return false
	}
	for _, c := range []byte(t) {
		ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// matchesResource reports whether one of the aud values names resource,
// ignoring one trailing slash on either side (RFC 8707 resources are URLs, and
// identity providers differ in whether they keep it).
func matchesResource(aud []string, resource string) bool {
	want := strings.TrimSuffix(resource, "/")
	return slices.ContainsFunc(aud, func(a string) bool { return strings.TrimSuffix(a, "/") == want })
}
