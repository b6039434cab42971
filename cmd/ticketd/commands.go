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

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/tickets"
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
	store, err := openDB(ctx, cfg)
	if err != nil {
		return err
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
// with --dev), an agent's (tickets:read tickets:write) unless --scope says
// otherwise, and prints only the token, so `$(ticketd token …)` works; what
// it is for and when it expires go to stderr. Deployments verifying with a
// JWKS or public key get tokens from their identity provider instead.
func token(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant the token acts for (required)")
	subject := fs.String("subject", "", "subject: who the token identifies, recorded as the reporter (required)")
	scope := fs.String("scope", authn.ScopeRead+" "+authn.ScopeWrite, "space-separated scopes: "+authn.ScopeRead+", "+authn.ScopeWrite+", "+authn.ScopeApprove+
		" (a person's, to approve writes: never give it to an agent), "+authn.ScopeAdmin+"; the default is an agent's")
	ttl := fs.Duration("ttl", defaultTokenTTL, "lifetime of the token; the default suits an agent's configuration, which nobody updates daily "+
		"(a token cannot be revoked before it expires except by changing the secret, so use e.g. 1h for one-off scripts)")
	cfg, err := parseConfig(fs, groupHTTP|groupDB|groupMint|groupDev, args, getenv, stdout)
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
	authCfg, _, err := cfg.authConfig()
	if err != nil {
		return err
	}
	now := time.Now()
	tok, err := authn.MintHS256(authCfg.HS256Secret, authn.TokenRequest{
		Issuer:      authCfg.Issuer,
		Audience:    authCfg.Audience,
		TenantClaim: authCfg.TenantClaim,
		Tenant:      *tenant,
		Subject:     *subject,
		Scopes:      strings.Fields(*scope),
		TTL:         *ttl,
	}, now)
	if err != nil {
		return fmt.Errorf("token: %w", err)
	}
	if _, err := fmt.Fprintln(stdout, tok); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "token for tenant %s, subject %s, audience %s; expires %s (in %s)\n",
		*tenant, *subject, authCfg.Audience, expiry(now, *ttl), days(*ttl))
	// A dev user's new tenant has nothing to file tickets against yet.
	if cfg.Dev && hasNoProject(ctx, cfg, *tenant) {
		fmt.Fprintf(stderr, "tenant %s has no project yet, so an agent cannot create tickets with this token; %s\n",
			*tenant, firstProjectHint(self, *tenant, cfg))
	}
	return nil
}

// expiry is when a token minted at now with ttl expires, as a token's exp
// claim records it (whole seconds).
func expiry(now time.Time, ttl time.Duration) string {
	return now.Add(ttl).UTC().Truncate(time.Second).Format(time.RFC3339)
}

// stdio serves the MCP tools over stdin and stdout as the principal of
// TICKETD_TOKEN, verified before anything else happens, so a bad token fails
// fast with a reason on stderr and nothing on stdout, which belongs to the
// protocol.
func stdio(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stdio", flag.ContinueOnError)
	// Help goes to stderr: stdout is the protocol stream.
	cfg, logger, cursorKey, err := setup(fs, groupPublic|groupDB|groupMigrate|groupAuth|groupLog|groupCursor|groupDev|groupToken|groupReplica|groupApprove|groupTracker|groupTools, args, getenv, stderr, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
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
		if exp, ok := expiredAt(cfg.Token, time.Now()); ok {
			return fmt.Errorf("stdio: TICKETD_TOKEN expired at %s: mint a new one (ticketd token; valid %s by default) and put it in the agent's configuration: %w",
				exp.UTC().Format(time.RFC3339), days(defaultTokenTTL), err)
		}
		return fmt.Errorf("stdio: TICKETD_TOKEN: %w", err)
	}
	// Only a start that goes ahead warns: a refusal stays one line.
	if w := cfg.cursorWarning(); w != "" {
		logger.Warn(w)
	}
	approvals, err := cfg.approvalOptions()
	if err != nil {
		return err
	}
	store, svc, _, _, err := openStore(ctx, cfg, tickets.Options{CursorKey: cursorKey}, nil, &approvals, logger)
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
	if err := mcptools.ServeStdio(ctx, svc, principal, logger, io.NopCloser(stdin), nopWriteCloser{stdout}, mcptools.StdioOptions{Toolsets: cfg.Toolsets, ReadOnly: cfg.ReadOnly}); err != nil {
		return fmt.Errorf("stdio: %w", err)
	}
	return nil
}

// days writes d in days when it is a whole number of them (30 days, not
// 720h0m0s), else as Go writes durations.
func days(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	default:
		return d.String()
	}
}

// expiredAt returns the exp claim of a token that has expired by now. It
// reads the claim without checking the signature, so it serves only to
// explain a rejection the verifier has already made.
func expiredAt(raw string, now time.Time) (time.Time, bool) {
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(raw, claims); err != nil {
		return time.Time{}, false
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil || !exp.Before(now) {
		return time.Time{}, false
	}
	return exp.Time, true
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
