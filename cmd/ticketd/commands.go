package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/mcptools"
)

// migrate applies pending migrations and prints the schema version, for
// deployments that migrate in a separate step and run serve --migrate=false.
func migrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	cfg, err := parseConfig(fs, groupDB|groupDev, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := cfg.checkDB(); err != nil {
		return err
	}
	if err := ensureDevDir(cfg); err != nil {
		return err
	}
	store, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("database (TICKETD_DATABASE_URL): %w", err)
	}
	defer store.Close()
	v, err := migrateUp(ctx, store)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "schema version %d\n", v)
	return err
}

// token mints an HS256 token from the configured secret (or the dev secret
// with --dev) and prints only the token, so `$(ticketd token …)` works.
// Deployments verifying with a JWKS or public key get tokens from their
// identity provider instead.
func token(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the token acts for (required)")
	subject := fs.String("subject", "", "subject: who the token identifies, recorded as the reporter (required)")
	scope := fs.String("scope", authn.ScopeRead+" "+authn.ScopeWrite, "space-separated scopes: "+authn.ScopeRead+", "+authn.ScopeWrite+", "+authn.ScopeAdmin)
	ttl := fs.Duration("ttl", time.Hour, "lifetime of the token")
	cfg, err := parseConfig(fs, groupHTTP|groupAuth|groupDev, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case *tenant == "":
		return errors.New("token: --tenant is required")
	case *subject == "":
		return errors.New("token: --subject is required")
	case cfg.JWKSURL != "" || cfg.PublicKeyFile != "":
		return errors.New("token: this server verifies tokens from an identity provider (TICKETD_JWT_JWKS_URL or TICKETD_JWT_PUBLIC_KEY_FILE); get tokens there, or set TICKETD_JWT_HS256_SECRET instead")
	case cfg.HS256Secret == "" && !cfg.Dev:
		return errors.New("token: no HS256 secret: set TICKETD_JWT_HS256_SECRET, or use --dev for the dev server's secret")
	}
	if err := cfg.checkHTTP(); err != nil {
		return err
	}
	authCfg, _, err := cfg.authConfig()
	if err != nil {
		return err
	}
	tok, err := authn.MintHS256(authCfg.HS256Secret, authn.TokenRequest{
		Issuer:      authCfg.Issuer,
		Audience:    authCfg.Audience,
		TenantClaim: authCfg.TenantClaim,
		Tenant:      *tenant,
		Subject:     *subject,
		Scopes:      strings.Fields(*scope),
		TTL:         *ttl,
	}, time.Now())
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// stdio serves the MCP tools over stdin and stdout as the principal of
// TICKETD_TOKEN, verified before anything else happens, so a bad token fails
// fast with a reason on stderr and nothing on stdout, which belongs to the
// protocol.
func stdio(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	// Help goes to stderr: stdout is the protocol stream.
	cfg, err := parseConfig(fs, groupHTTP|groupDB|groupMigrate|groupAuth|groupLog|groupCursor|groupDev|groupToken, args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger, cursorKey, err := cfg.prepare(stderr)
	if err != nil {
		return err
	}
	if cfg.Token == "" {
		return errors.New("stdio: no token: set TICKETD_TOKEN to a bearer token for this server (ticketd token mints one)")
	}
	verifier, _, err := cfg.verifier(ctx)
	if err != nil {
		return err
	}
	principal, err := verifier.Verify(ctx, cfg.Token)
	if err != nil {
		return fmt.Errorf("stdio: TICKETD_TOKEN: %w", err)
	}
	store, svc, err := openStore(ctx, cfg, cursorKey, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	if cfg.Dev {
		if err := seedDev(ctx, svc); err != nil {
			return err
		}
	}
	logger.Info("serving MCP over stdio", "tenant", principal.Tenant, "subject", principal.Subject)
	if err := mcptools.ServeStdio(ctx, svc, principal, logger, io.NopCloser(stdin), nopWriteCloser{stdout}); err != nil {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}

// nopWriteCloser lets run's stdout serve as the protocol stream without the
// session closing the process's stdout (or a test's buffer) when it ends.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// ensureDevDir creates the dev data directory, where dev mode's default
// SQLite database lives; SQLite does not create directories.
func ensureDevDir(cfg *config) error {
	if !cfg.Dev {
		return nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("dev data directory: %w", err)
	}
	return nil
}
