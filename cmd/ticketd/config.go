package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/server"
)

// group is a set of settings; each command takes the groups it uses, so
// `ticketd migrate -h` does not list JWT flags.
type group uint

const (
	groupHTTP    group = 1 << iota // listen address and public URL (the audience derives from them)
	groupDB                        // database URL
	groupMigrate                   // migrate at start
	groupAuth                      // JWT verification
	groupLog                       // log format and level
	groupCursor                    // cursor signing key
	groupDev                       // --dev and its data directory
	groupToken                     // the stdio principal's token
	groupMetrics                   // where /metrics is served
	groupEdge                      // Origin/Host allow-lists, tenant limits, read-only
	groupWebhook                   // webhook delivery
	groupPublic                    // the public URL alone, for stdio: it derives the audience but listens nowhere
	groupMint                      // what minting a token needs: issuer, audience, HS256 secret, tenant claim
	groupReplica                   // the read replica (serve and stdio, which read)
	groupApprove                   // approval of consequential writes
)

// Defaults that also appear in help and error messages.
const (
	defaultAddr        = "127.0.0.1:8080"
	defaultDatabaseURL = "sqlite://ticketd.db"
	defaultDataDir     = ".ticketd"
	devIssuer          = "ticketd-dev"
	devDatabaseFile    = "ticketd.db"
	// minCursorSecret matches the HS256 rule: an HMAC key at least as long
	// as its hash output.
	minCursorSecret = 32
)

// config is every setting of every command. Empty strings mean "derive the
// default", which depends on other settings (the audience on the public URL,
// the database on --dev), so defaults are resolved after parsing.
type config struct {
	Addr          string
	DatabaseURL   string
	PublicURL     string
	Issuer        string
	Audience      string
	JWKSURL       string
	PublicKeyFile string
	HS256Secret   string
	TenantClaim   string
	LogFormat     string
	LogLevel      string
	CursorSecret  string
	Migrate       bool
	Dev           bool
	DataDir       string
	Token         string
	MetricsAddr   string
	// AuthorizationServers is TICKETD_OAUTH_AUTHORIZATION_SERVERS, checked
	// by server.ParseAuthorizationServers.
	AuthorizationServers string

	// ReadDatabaseURL is the optional read replica (docs/scale.md).
	ReadDatabaseURL string

	// The edge (docs/architecture.md#the-edge-in-the-order-it-is-wired), parsed and checked by edge().
	AllowedOrigins    string
	AllowedHosts      string
	RateLimitWrites   string
	RateLimitReads    string
	RateLimitBurst    string
	TenantConcurrency string
	WorkSlots         string
	ReadOnly          bool

	// Approval (docs/contract.md#approval), parsed and checked by approvalOptions().
	Approval              string
	ApprovalBulkThreshold string
	ApprovalSecret        string

	WebhookRetryMin     time.Duration
	WebhookMaxAttempts  int
	WebhookAllowPrivate bool
	// Tracker-backed projects (docs/contract.md#tracker-backed-projects); zero takes the defaults.
	ReconcileSettle    time.Duration
	TrackerTimeout     time.Duration
	WebhookConcurrency int
	WebhookRescueAfter time.Duration

	// DBSession bounds each PostgreSQL session (db.Session).
	DBSession db.Session

	// derivedPublicURL records that PublicURL came from Addr, which is
	// wrong for clients when Addr is a wildcard such as 0.0.0.0.
	derivedPublicURL bool
}

// stringSetting is one string setting: its variable, flag, built-in default
// (empty: derived later) and what it means.
type stringSetting struct {
	group group
	env   string
	flag  string
	def   string
	usage string
	field func(*config) *string
}

// stringSettings is the configuration surface in one place; help text is
// generated from it, so flag, variable and default never disagree.
var stringSettings = []stringSetting{
	{groupHTTP, "TICKETD_ADDR", "addr", defaultAddr, "listen address host:port", func(c *config) *string { return &c.Addr }},
	{groupHTTP | groupPublic, "TICKETD_PUBLIC_URL", "public-url", "", "URL clients reach this server at (default http://ADDR)", func(c *config) *string { return &c.PublicURL }},
	{groupDB, "TICKETD_DATABASE_URL", "database-url", "", "postgres://USER:PASS@HOST:PORT/DB?sslmode=… or sqlite://PATH (default " + defaultDatabaseURL + "; with --dev sqlite://DATA_DIR/" + devDatabaseFile + ")", func(c *config) *string { return &c.DatabaseURL }},
	{groupReplica, "TICKETD_READ_DATABASE_URL", "read-database-url", "", "optional PostgreSQL hot standby for lists, search and history; a query runs there only when the standby has replayed all the primary has committed, else on the primary", func(c *config) *string { return &c.ReadDatabaseURL }},
	{groupAuth | groupMint, "TICKETD_JWT_ISSUER", "jwt-issuer", "", "iss claim tokens must carry (required; with --dev " + devIssuer + ")", func(c *config) *string { return &c.Issuer }},
	{groupAuth | groupMint, "TICKETD_JWT_AUDIENCE", "jwt-audience", "", "aud claim tokens must carry (default PUBLIC_URL/mcp)", func(c *config) *string { return &c.Audience }},
	{groupAuth, "TICKETD_JWT_JWKS_URL", "jwt-jwks-url", "", "key source: identity provider JWK Set URL", func(c *config) *string { return &c.JWKSURL }},
	{groupAuth, "TICKETD_JWT_PUBLIC_KEY_FILE", "jwt-public-key-file", "", "key source: PEM public key file (RSA, ECDSA or Ed25519)", func(c *config) *string { return &c.PublicKeyFile }},
	{groupAuth | groupMint, "TICKETD_JWT_HS256_SECRET", "jwt-hs256-secret", "", "key source: shared HS256 secret, at least 32 bytes (prefer the variable: flags show in ps)", func(c *config) *string { return &c.HS256Secret }},
	{groupAuth | groupMint, "TICKETD_JWT_TENANT_CLAIM", "jwt-tenant-claim", "tenant_id", "claim that carries the tenant", func(c *config) *string { return &c.TenantClaim }},
	{groupLog, "TICKETD_LOG_FORMAT", "log-format", "text", "log format: text or json", func(c *config) *string { return &c.LogFormat }},
	{groupLog, "TICKETD_LOG_LEVEL", "log-level", "info", "log level: debug, info, warn or error", func(c *config) *string { return &c.LogLevel }},
	{groupCursor, "TICKETD_CURSOR_SECRET", "cursor-secret", "", "key signing list cursors, at least 32 bytes; give replicas the same one (default: with --dev kept in DATA_DIR, else random per process)", func(c *config) *string { return &c.CursorSecret }},
	{groupDev, "TICKETD_DATA_DIR", "data-dir", defaultDataDir, "where --dev keeps its secret and SQLite database", func(c *config) *string { return &c.DataDir }},
	{groupMetrics, "TICKETD_METRICS_ADDR", "metrics-addr", "", "serve /metrics on this host:port of its own instead of on TICKETD_ADDR (keeps it off a public listener)", func(c *config) *string { return &c.MetricsAddr }},
	// The edge, in one block: edge() parses and checks these.
	{groupEdge, "TICKETD_OAUTH_AUTHORIZATION_SERVERS", "oauth-authorization-servers", "", "comma-separated issuer URLs of the OAuth authorization servers whose tokens ticketd verifies, named in Protected Resource Metadata so OAuth clients find them (default: TICKETD_JWT_ISSUER if it is a URL)", func(c *config) *string { return &c.AuthorizationServers }},
	{groupEdge, "TICKETD_ALLOWED_ORIGINS", "allowed-origins", "", "comma-separated origins (scheme://host[:port]) besides the public URL's that browsers may call from", func(c *config) *string { return &c.AllowedOrigins }},
	{groupEdge, "TICKETD_ALLOWED_HOSTS", "allowed-hosts", "", "comma-separated Host names besides the public URL's host the server answers to (e.g. an internal name behind a proxy)", func(c *config) *string { return &c.AllowedHosts }},
	{groupEdge, "TICKETD_RATE_LIMIT_WRITES", "rate-limit-writes", "50", "writes per second per tenant (0 = no limit)", func(c *config) *string { return &c.RateLimitWrites }},
	{groupEdge, "TICKETD_RATE_LIMIT_READS", "rate-limit-reads", "200", "reads per second per tenant (0 = no limit)", func(c *config) *string { return &c.RateLimitReads }},
	{groupEdge, "TICKETD_RATE_LIMIT_BURST", "rate-limit-burst", "0", "requests a tenant may send at once above its rate (0 = twice the rate)", func(c *config) *string { return &c.RateLimitBurst }},
	{groupEdge, "TICKETD_TENANT_CONCURRENCY", "tenant-concurrency", "", "requests in flight per tenant, below the database pool (default three quarters of it: 15 on PostgreSQL, 3 on SQLite)", func(c *config) *string { return &c.TenantConcurrency }},
	{groupEdge, "TICKETD_WORK_SLOTS", "work-slots", "", "writes and list pages run at once across all tenants, shared out in turn (default two per core, below the database pool)", func(c *config) *string { return &c.WorkSlots }},
	{groupApprove, "TICKETD_APPROVAL", "approval", "on", "on: urgent tickets and large bulk updates need a person's yes before they are written; off: nobody is asked", func(c *config) *string { return &c.Approval }},
	{groupApprove, "TICKETD_APPROVAL_BULK_THRESHOLD", "approval-bulk-threshold", "10", "bulk updates of at least this many tickets need approval", func(c *config) *string { return &c.ApprovalBulkThreshold }},
	{groupApprove, "TICKETD_APPROVAL_SECRET", "approval-secret", "", "key signing approval request states, at least 32 bytes; give replicas the same one (default: with --dev kept in DATA_DIR, else random per process)", func(c *config) *string { return &c.ApprovalSecret }},
	{groupToken, "TICKETD_TOKEN", "token", "", "bearer token whose principal the stdio session acts as (required; prefer the variable)", func(c *config) *string { return &c.Token }},
}

// typedSetting is one setting whose value is not a string: like a
// stringSetting, plus into, which decodes its text (from the variable or the
// flag) into the config and says what it wants when the text will not do.
// A bool setting is a switch: --read-only alone means true.
type typedSetting struct {
	group group
	env   string
	flag  string
	def   string
	usage string
	into  func(*config) decoder
}

// typedSettings are the settings that are not strings, declared and checked
// the same way as stringSettings. Their usage names the value's kind in
// backquotes, which help shows after the flag.
var typedSettings = []typedSetting{
	{groupMigrate, "TICKETD_MIGRATE", "migrate", "true", "apply migrations at start", func(c *config) decoder { return boolInto(&c.Migrate) }},
	{groupEdge, "TICKETD_READ_ONLY", "read-only", "false", "serve the read tools only and refuse REST writes", func(c *config) decoder { return boolInto(&c.ReadOnly) }},
	{groupWebhook, "TICKETD_WEBHOOK_RETRY_MIN", "webhook-retry-min", "5s", "the delay (a `duration`) before a webhook delivery's first retry; later ones double, with jitter", func(c *config) decoder { return positiveDurationInto(&c.WebhookRetryMin) }},
	{groupWebhook, "TICKETD_WEBHOOK_MAX_ATTEMPTS", "webhook-max-attempts", "12", "the `count` of attempts of one webhook delivery before it is failed", func(c *config) decoder { return atLeastInto(&c.WebhookMaxAttempts, 1) }},
	{groupWebhook, "TICKETD_WEBHOOK_ALLOW_PRIVATE", "webhook-allow-private", "false", "allow http:// and loopback or private webhook URLs; --dev allows loopback", func(c *config) decoder { return boolInto(&c.WebhookAllowPrivate) }},
	{groupWebhook, "TICKETD_RECONCILE_SETTLE", "reconcile-settle", "2m", "how long (a `duration`) after an unanswered tracker request ticketd waits for it to land before it may send again", func(c *config) decoder { return positiveDurationInto(&c.ReconcileSettle) }},
	{groupWebhook, "TICKETD_TRACKER_TIMEOUT", "tracker-timeout", "10s", "the bound (a `duration`) on one request to a tracker, answer included", func(c *config) decoder { return positiveDurationInto(&c.TrackerTimeout) }},
	{groupWebhook, "TICKETD_WEBHOOK_CONCURRENCY", "webhook-concurrency", "32", "the `count` of webhook deliveries one replica sends at once; a tenant holds at most three quarters of them, a subscription half", func(c *config) decoder { return atLeastInto(&c.WebhookConcurrency, 1) }},
	{groupWebhook, "TICKETD_WEBHOOK_RESCUE_AFTER", "webhook-rescue-after", "22s", "retry a delivery on another worker once its attempt has looked running this long (a `duration`; a dead replica's); the default is the longest a live attempt takes", func(c *config) decoder { return positiveDurationInto(&c.WebhookRescueAfter) }},
	// The PostgreSQL session limits (db.Session): above the 15s write timeout.
	{groupDB, "TICKETD_DB_IDLE_IN_TRANSACTION_TIMEOUT", "db-idle-in-transaction-timeout", db.DefaultIdleInTransaction.String(), "PostgreSQL ends a session idle inside a transaction this long (a `duration`; a frozen or cut-off replica), releasing its locks", func(c *config) decoder { return atLeastDurationInto(&c.DBSession.IdleInTransaction, time.Second) }},
	{groupDB, "TICKETD_DB_STATEMENT_TIMEOUT", "db-statement-timeout", db.DefaultStatement.String(), "PostgreSQL ends a statement running or waiting this long (a `duration`); keep it above the 15s write timeout", func(c *config) decoder { return atLeastDurationInto(&c.DBSession.Statement, time.Second) }},
	{groupDB, "TICKETD_DB_TCP_TIMEOUT", "db-tcp-timeout", db.DefaultTCP.String(), "both ends of a database connection give up on a silent peer after about this long (a `duration`; keepalives, TCP_USER_TIMEOUT)", func(c *config) decoder { return atLeastDurationInto(&c.DBSession.TCP, time.Second) }},
}

// envOnly names settings that a command in the given groups reads from the
// environment without offering their flag: it cannot use them, but they
// shape what it does use. stdio derives the public URL (so the tokens'
// audience) from TICKETD_ADDR exactly as serve does; token refuses to mint
// for a server that verifies an identity provider's keys.
var envOnly = map[string]group{
	"addr":                groupPublic,
	"jwt-jwks-url":        groupMint,
	"jwt-public-key-file": groupMint,
}

// setup is parseConfig then prepare, for the long-running commands (serve,
// stdio): help is written to out and returned as flag.ErrHelp, which the
// caller answers with success.
func setup(fs *flag.FlagSet, groups group, args []string, getenv func(string) string, out, stderr io.Writer) (*config, *slog.Logger, []byte, error) {
	cfg, err := parseConfig(fs, groups, args, getenv, out)
	if err != nil {
		return nil, nil, nil, err
	}
	logger, cursorKey, err := cfg.prepare(stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	return cfg, logger, cursorKey, nil
}

// parseConfig reads the groups' settings from the environment, then from
// args, which win, decodes and checks them (validate), and fills the derived
// defaults. For -h it writes help to out and returns flag.ErrHelp, which the
// commands turn into success.
func parseConfig(fs *flag.FlagSet, groups group, args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	for _, s := range stringSettings {
		if s.group&groups == 0 {
			if envOnly[s.flag]&groups != 0 {
				*s.field(c) = cmp.Or(getenv(s.env), s.def)
			}
			continue
		}
		fs.StringVar(s.field(c), s.flag, s.def, fmt.Sprintf("%s (env %s)", s.usage, s.env))
		// The environment goes in as a value, not as the flag's default,
		// so help never prints a secret taken from the environment.
		if v := getenv(s.env); v != "" {
			*s.field(c) = v
		}
	}
	typed := make(map[string]*text)
	for _, s := range typedSettings {
		if s.group&groups == 0 {
			continue
		}
		t := &text{value: s.def, isBool: s.into(c).isBool()}
		fs.Var(t, s.flag, fmt.Sprintf("%s (env %s)", s.usage, s.env))
		if v := getenv(s.env); v != "" {
			t.value = v
		}
		typed[s.flag] = t
	}
	if groups&groupDev != 0 {
		fs.BoolVar(&c.Dev, "dev", false, "development mode: HS256 secret generated in DATA_DIR (kept across starts), issuer "+devIssuer+
			", SQLite in DATA_DIR unless TICKETD_DATABASE_URL is set, tenant "+devTenant+" seeded, loopback only")
	}
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printHelp(fs, out)
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w (see ticketd %s -h)", fs.Name(), err, fs.Name())
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%s: unexpected argument %q (see ticketd %s -h)", fs.Name(), fs.Arg(0), fs.Name())
	}
	flagged := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { flagged[f.Name] = true })
	for _, s := range typedSettings {
		t, ok := typed[s.flag]
		if !ok {
			continue
		}
		if err := s.into(c).decode(t.value); err != nil {
			if flagged[s.flag] {
				return nil, fmt.Errorf("--%s %s: %w", s.flag, t.value, err)
			}
			return nil, fmt.Errorf("%s=%q: %w", s.env, t.value, err)
		}
	}
	c.resolve()
	if err := c.validate(groups); err != nil {
		return nil, err
	}
	return c, nil
}

// validate is the one check of the settings the groups declare, made before
// anything is opened or listens, so a bad value stops a command with one
// line naming what to set.
func (c *config) validate(groups group) error {
	if groups&(groupHTTP|groupPublic) != 0 {
		if err := c.checkHTTP(groups&groupHTTP != 0); err != nil {
			return err
		}
	}
	if groups&groupDB != 0 {
		if err := c.checkDB(); err != nil {
			return err
		}
	}
	if groups&groupLog != 0 {
		if _, err := c.logger(io.Discard); err != nil {
			return err
		}
	}
	if groups&groupCursor != 0 {
		if _, err := c.cursorKey(); err != nil {
			return err
		}
	}
	if groups&groupEdge != 0 {
		if _, err := c.edge(); err != nil {
			return err
		}
	}
	return nil
}

func printHelp(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprintf(out, "Usage: ticketd %s [flags]\n\nFlags (a flag overrides the environment variable named with it):\n", fs.Name())
	fs.SetOutput(out)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// resolve fills the derived defaults.
func (c *config) resolve() {
	if c.PublicURL == "" && c.Addr != "" {
		c.PublicURL = "http://" + c.Addr
		c.derivedPublicURL = true
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	if c.Audience == "" && c.PublicURL != "" {
		c.Audience = c.PublicURL + "/mcp"
	}
	if c.DatabaseURL == "" {
		c.DatabaseURL = defaultDatabaseURL
		if c.Dev {
			c.DatabaseURL = "sqlite://" + filepath.Join(c.DataDir, devDatabaseFile)
		}
	}
	if c.Issuer == "" && c.Dev {
		c.Issuer = devIssuer
	}
}

// keySources names the configured JWT key sources by their variables.
func (c *config) keySources() []string {
	var names []string
	if c.JWKSURL != "" {
		names = append(names, "TICKETD_JWT_JWKS_URL")
	}
	if c.PublicKeyFile != "" {
		names = append(names, "TICKETD_JWT_PUBLIC_KEY_FILE")
	}
	if c.HS256Secret != "" {
		names = append(names, "TICKETD_JWT_HS256_SECRET")
	}
	return names
}

// checkHTTP validates the public URL and, for a command that listens, the
// listen addresses. With --dev an address must be loopback: dev mode's
// secret sits on disk and its token is printed, so it must not be reachable
// from the network.
func (c *config) checkHTTP(listens bool) error {
	// The same check server.New makes, made here so that a bad URL stops
	// start-up before the database is opened.
	if _, err := server.ParsePublicURL(c.PublicURL); err != nil {
		return fmt.Errorf("TICKETD_PUBLIC_URL: %w", err)
	}
	if !listens {
		return nil
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("TICKETD_ADDR %q: want host:port, e.g. %s", c.Addr, defaultAddr)
	}
	if c.Dev && !server.IsLoopbackHost(host) {
		return fmt.Errorf("--dev listens on loopback only, and TICKETD_ADDR %q is not loopback: use 127.0.0.1:PORT, or configure a JWT key source and drop --dev", c.Addr)
	}
	if c.MetricsAddr != "" {
		host, _, err := net.SplitHostPort(c.MetricsAddr)
		if err != nil {
			return fmt.Errorf("TICKETD_METRICS_ADDR %q: want host:port, e.g. 127.0.0.1:9090", c.MetricsAddr)
		}
		if c.Dev && !server.IsLoopbackHost(host) {
			return fmt.Errorf("--dev listens on loopback only, and TICKETD_METRICS_ADDR %q is not loopback: use 127.0.0.1:PORT", c.MetricsAddr)
		}
	}
	return nil
}

// warnings returns advice about settings that work but are likely wrong.
func (c *config) warnings() []string {
	host, _, _ := net.SplitHostPort(c.Addr)
	if ip := net.ParseIP(host); c.derivedPublicURL && (host == "" || ip != nil && ip.IsUnspecified()) {
		return []string{fmt.Sprintf("TICKETD_PUBLIC_URL is not set, so clients are told the MCP resource is %s/mcp and tokens must carry that audience; set it to the URL clients use", c.PublicURL)}
	}
	return nil
}

// cursorWarning says what a missing cursor secret costs outside --dev
// (which keeps one in its data directory), or "".
func (c *config) cursorWarning() string {
	if c.Dev || c.CursorSecret != "" {
		return ""
	}
	return "TICKETD_CURSOR_SECRET is not set: list cursors are signed with a random key of this process, so they stop working after a restart and on other replicas or processes; set it to the same 32+ byte secret everywhere"
}

// checkDB validates the database URL without connecting.
func (c *config) checkDB() error {
	dialect, _, err := db.ParseURL(c.DatabaseURL)
	if err != nil {
		return fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
	}
	if c.ReadDatabaseURL != "" {
		readDialect, _, err := db.ParseURL(c.ReadDatabaseURL)
		if err != nil {
			return fmt.Errorf("TICKETD_READ_DATABASE_URL: %w", err)
		}
		if dialect != db.Postgres || readDialect != db.Postgres {
			return fmt.Errorf("TICKETD_READ_DATABASE_URL: %w", db.ErrReplicaNotPostgres)
		}
	}
	return nil
}

// cursorKey returns the configured cursor key; nil lets the service pick a
// random one, which is right for a single process.
func (c *config) cursorKey() ([]byte, error) {
	if c.CursorSecret == "" {
		return nil, nil
	}
	if len(c.CursorSecret) < minCursorSecret {
		return nil, fmt.Errorf("TICKETD_CURSOR_SECRET is %d bytes; it must be at least %d (generate one with: openssl rand -hex 32)", len(c.CursorSecret), minCursorSecret)
	}
	return []byte(c.CursorSecret), nil
}

// logger builds the structured logger; logs always go to stderr, so stdout
// stays free for the dev banner, token output and the stdio protocol.
func (c *config) logger(stderr io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return nil, fmt.Errorf("TICKETD_LOG_LEVEL %q: want debug, info, warn or error", c.LogLevel)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.LogFormat {
	case "text":
		return slog.New(slog.NewTextHandler(stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(stderr, opts)), nil
	default:
		return nil, fmt.Errorf("TICKETD_LOG_FORMAT %q: want text or json", c.LogFormat)
	}
}
