package authn

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/golang-jwt/jwt/v5"
)

// TokenRequest describes a token to mint.
type TokenRequest struct {
	Issuer   string
	Audience string
	Tenant   string
	Subject  string
	// Scopes are written space-separated into the "scope" claim, so none
	// may be empty or contain white space.
	Scopes []string
	TTL    time.Duration
	// TenantClaim names the claim carrying the tenant; "tenant_id" if empty.
	// It must match the verifier's Config.TenantClaim.
	TenantClaim string
}

// MintHS256 signs a token for req with secret, issued at now. It exists for
// `ticketd token`, dev mode and tests, where ticketd is its own issuer; in
// production an identity provider mints tokens. It refuses anything the
// Verifier would reject (short secret, unsafe tenant, missing issuer,
// audience or subject, non-positive TTL) so a minted token never fails later
// for a reason that was knowable now.
func MintHS256(secret []byte, req TokenRequest, now time.Time) (string, error) {
	if err := checkHS256Secret(secret); err != nil {
		return "", err
	}
	switch {
	case req.Issuer == "":
		return "", errors.New("issuer is required")
	case req.Audience == "":
		return "", errors.New("audience is required")
	case req.Subject == "":
		return "", errors.New("subject is required")
	case !ValidTenant(req.Tenant):
		return "", fmt.Errorf("tenant %q must be 1-%d characters of A-Z a-z 0-9 . _ -", req.Tenant, maxTenantLen)
	case req.TTL <= 0:
		return "", fmt.Errorf("TTL must be positive (got %s)", req.TTL)
	}
	for _, s := range req.Scopes {
		if s == "" || strings.ContainsFunc(s, unicode.IsSpace) {
			return "", fmt.Errorf("scope %q must be non-empty and contain no white space", s)
		}
	}
	claims := jwt.MapClaims{
		"iss":   req.Issuer,
		"aud":   req.Audience,
		"sub":   req.Subject,
		"scope": strings.Join(req.Scopes, " "),
		"iat":   now.Unix(),
		"exp":   now.Add(req.TTL).Unix(),
	}
	tenantClaim := cmp.Or(req.TenantClaim, defaultTenantClaim)
	if _, taken := claims[tenantClaim]; taken {
		return "", fmt.Errorf("tenant claim %q would overwrite a standard claim", tenantClaim)
	}
	claims[tenantClaim] = req.Tenant
	signed, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return signed, nil
}
