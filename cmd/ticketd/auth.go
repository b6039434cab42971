package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
)

// errNoKeySource is what a server without auth configuration says. It is a
// variable so tests can match it.
var errNoKeySource = errors.New("no JWT key source: set TICKETD_JWT_JWKS_URL, TICKETD_JWT_PUBLIC_KEY_FILE or TICKETD_JWT_HS256_SECRET, or run with --dev")

// authConfig checks the JWT settings and loads the key material. With --dev
// and no HS256 secret configured, the key is the dev secret under DataDir,
// created on first use. source names where the key came from, for errors.
func (c *config) authConfig() (cfg authn.Config, source string, err error) {
	sources := c.keySources()
	switch {
	case c.Dev && (c.JWKSURL != "" || c.PublicKeyFile != ""):
		return cfg, "", fmt.Errorf("--dev mints its own HS256 tokens, so it cannot use %s: unset it or drop --dev", sources[0])
	case len(sources) > 1:
		return cfg, "", fmt.Errorf("more than one JWT key source (%s): set exactly one", strings.Join(sources, ", "))
	case len(sources) == 0 && !c.Dev:
		return cfg, "", errNoKeySource
	case c.Issuer == "":
		return cfg, "", errors.New("no JWT issuer: set TICKETD_JWT_ISSUER to the iss claim your tokens carry")
	}
	cfg = authn.Config{Issuer: c.Issuer, Audience: c.Audience, TenantClaim: c.TenantClaim}
	switch {
	case c.JWKSURL != "":
		cfg.JWKSURL, source = c.JWKSURL, "TICKETD_JWT_JWKS_URL"
	case c.PublicKeyFile != "":
		source = "TICKETD_JWT_PUBLIC_KEY_FILE"
		if cfg.PublicKeyPEM, err = os.ReadFile(c.PublicKeyFile); err != nil {
			return cfg, "", fmt.Errorf("%s: %w", source, err)
		}
	case c.HS256Secret != "":
		cfg.HS256Secret, source = []byte(c.HS256Secret), "TICKETD_JWT_HS256_SECRET"
	default:
		secret, path, err := devSecret(c.DataDir)
		if err != nil {
			return cfg, "", err
		}
		cfg.HS256Secret, source = secret, "dev secret "+path
	}
	return cfg, source, nil
}

// verifier builds the JWT verifier, so every key problem (short secret,
// unparsable PEM, unreachable JWKS) stops start-up instead of becoming 401s.
// ctx bounds the JWKS refresh goroutine.
func (c *config) verifier(ctx context.Context) (*authn.Verifier, authn.Config, error) {
	cfg, source, err := c.authConfig()
	if err != nil {
		return nil, cfg, err
	}
	v, err := authn.NewVerifier(ctx, cfg)
	if err != nil {
		return nil, cfg, fmt.Errorf("%s: %w", source, err)
	}
	return v, cfg, nil
}
