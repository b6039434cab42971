package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/server"
)

// group is a set of settings; each command takes the groups it uses, so
// `ticketd migrate -h` does not list JWT flags.
type group uint

const (
	groupHTTP    group = 1 << iota // address and public URL (the audience derives from them)
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

	// The edge (DESIGN §12), parsed and checked by edge().
	AllowedOrigins    string
	AllowedHosts      string
	RateLimitWrites   string
	RateLimitReads    string
	RateLimitBurst    string
	TenantConcurrency string
	ReadOnly          bool

	WebhookRetryMin     time.Duration
	WebhookMaxAttempts  int
	WebhookAllowPrivate bool
	// Tracker-backed projects (DESIGN §16); zero takes the defaults.
	ReconcileSettle time.Duration
	TrackerTimeout  time.Duration

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
	{groupHTTP, "TICKETD_PUBLIC_URL", "public-url", "", "URL clients reach this server at (default http://ADDR)", func(c *config) *string { return &c.PublicURL }},
	{groupDB, "TICKETD_DATABASE_URL", "database-url", "", "postgres://USER:PASS@HOST:PORT/DB?sslmode=… or sqlite://PATH (default " + defaultDatabaseURL + "; with --dev sqlite://DATA_DIR/" + devDatabaseFile + ")", func(c *config) *string { return &c.DatabaseURL }},
	{groupAuth, "TICKETD_JWT_ISSUER", "jwt-issuer", "", "iss claim tokens must carry (required; with --dev " + devIssuer + ")", func(c *config) *string { return &c.Issuer }},
	{groupAuth, "TICKETD_JWT_AUDIENCE", "jwt-audience", "", "aud claim tokens must carry (default PUBLIC_URL/mcp)", func(c *config) *string { return &c.Audience }},
	{groupAuth, "TICKETD_JWT_JWKS_URL", "jwt-jwks-url", "", "key source: identity provider JWK Set URL", func(c *config) *string { return &c.JWKSURL }},
	{groupAuth, "TICKETD_JWT_PUBLIC_KEY_FILE", "jwt-public-key-file", "", "key source: PEM public key file (RSA, ECDSA or Ed25519)", func(c *config) *string { return &c.PublicKeyFile }},
	{groupAuth, "TICKETD_JWT_HS256_SECRET", "jwt-hs256-secret", "", "key source: shared HS256 secret, at least 32 bytes (prefer the variable: flags show in ps)", func(c *config) *string { return &c.HS256Secret }},
	{groupAuth, "TICKETD_JWT_TENANT_CLAIM", "jwt-tenant-claim", "tenant_id", "claim that carries the tenant", func(c *config) *string { return &c.TenantClaim }},
	{groupLog, "TICKETD_LOG_FORMAT", "log-format", "text", "log format: text or json", func(c *config) *string { return &c.LogFormat }},
	{groupLog, "TICKETD_LOG_LEVEL", "log-level", "info", "log level: debug, info, warn or error", func(c *config) *string { return &c.LogLevel }},
	{groupCursor, "TICKETD_CURSOR_SECRET", "cursor-secret", "", "key signing list cursors, at least 32 bytes; give replicas the same one (default random per process)", func(c *config) *string { return &c.CursorSecret }},
	{groupDev, "TICKETD_DATA_DIR", "data-dir", defaultDataDir, "where --dev keeps its secret and SQLite database", func(c *config) *string { return &c.DataDir }},
	{groupMetrics, "TICKETD_METRICS_ADDR", "metrics-addr", "", "serve /metrics on this host:port of its own instead of on TICKETD_ADDR (keeps it off a public listener)", func(c *config) *string { return &c.MetricsAddr }},
	// The edge, in one block: edge() parses and checks these.
	{groupEdge, "TICKETD_ALLOWED_ORIGINS", "allowed-origins", "", "comma-separated origins (scheme://host[:port]) besides the public URL's that browsers may call from", func(c *config) *string { return &c.AllowedOrigins }},
	{groupEdge, "TICKETD_ALLOWED_HOSTS", "allowed-hosts", "", "comma-separated Host names besides the public URL's host the server answers to (e.g. an internal name behind a proxy)", func(c *config) *string { return &c.AllowedHosts }},
	{groupEdge, "TICKETD_RATE_LIMIT_WRITES", "rate-limit-writes", "50", "writes per second per tenant (0 = no limit)", func(c *config) *string { return &c.RateLimitWrites }},
	{groupEdge, "TICKETD_RATE_LIMIT_READS", "rate-limit-reads", "200", "reads per second per tenant (0 = no limit)", func(c *config) *string { return &c.RateLimitReads }},
	{groupEdge, "TICKETD_RATE_LIMIT_BURST", "rate-limit-burst", "0", "requests a tenant may send at once above its rate (0 = twice the rate)", func(c *config) *string { return &c.RateLimitBurst }},
	{groupEdge, "TICKETD_TENANT_CONCURRENCY", "tenant-concurrency", "64", "requests in flight per tenant (0 = no cap)", func(c *config) *string { return &c.TenantConcurrency }},
	{groupToken, "TICKETD_TOKEN", "token", "", "bearer token whose principal the stdio session acts as (required; prefer the variable)", func(c *config) *string { return &c.Token }},
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
// args, which win. For -h it writes help to out and returns flag.ErrHelp,
// which the commands turn into success.
func parseConfig(fs *flag.FlagSet, groups group, args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	for _, s := range stringSettings {
		if s.group&groups == 0 {
			continue
		}
		fs.StringVar(s.field(c), s.flag, s.def, fmt.Sprintf("%s (env %s)", s.usage, s.env))
		// The environment goes in as a value, not as the flag's default,
		// so help never prints a secret taken from the environment.
		if v := getenv(s.env); v != "" {
			*s.field(c) = v
		}
	}
	if groups&groupMigrate != 0 {
		fs.BoolVar(&c.Migrate, "migrate", true, "apply migrations at start (env TICKETD_MIGRATE)")
		if v := getenv("TICKETD_MIGRATE"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("TICKETD_MIGRATE=%q: want true or false", v)
			}
			c.Migrate = b
		}
	}
	if groups&groupEdge != 0 {
		fs.BoolVar(&c.ReadOnly, "read-only", false, "serve the read tools only and refuse REST writes (env TICKETD_READ_ONLY)")
		if v := getenv("TICKETD_READ_ONLY"); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return nil, fmt.Errorf("TICKETD_READ_ONLY=%q: want true or false", v)
			}
			c.ReadOnly = b
		}
	}
	if groups&groupWebhook != 0 {
		if err := c.webhookSettings(fs, getenv); err != nil {
			return nil, err
		}
		if err := c.trackerSettings(fs, getenv); err != nil {
			return nil, err
		}
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
	c.resolve()
	return c, nil
}

func printHelp(fs *flag.FlagSet, out io.Writer) {
	fmt.Fprintf(out, "Usage: ticketd %s [flags]\n\nFlags (a flag overrides the environment variable named with it):\n", fs.Name())
	fs.SetOutput(out)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// webhookSettings declares the webhook delivery settings and reads their
// variables (DESIGN §11).
func (c *config) webhookSettings(fs *flag.FlagSet, getenv func(string) string) error {
	fs.DurationVar(&c.WebhookRetryMin, "webhook-retry-min", 5*time.Second, "delay before a webhook delivery's first retry; later ones double, with jitter (env TICKETD_WEBHOOK_RETRY_MIN)")
	fs.IntVar(&c.WebhookMaxAttempts, "webhook-max-attempts", 12, "attempts of one webhook delivery before it is failed (env TICKETD_WEBHOOK_MAX_ATTEMPTS)")
	fs.BoolVar(&c.WebhookAllowPrivate, "webhook-allow-private", false, "allow http:// and loopback or private webhook URLs; --dev allows loopback (env TICKETD_WEBHOOK_ALLOW_PRIVATE)")
	if v := getenv("TICKETD_WEBHOOK_RETRY_MIN"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("TICKETD_WEBHOOK_RETRY_MIN=%q: want a positive duration such as 5s", v)
		}
		c.WebhookRetryMin = d
	}
	if v := getenv("TICKETD_WEBHOOK_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return fmt.Errorf("TICKETD_WEBHOOK_MAX_ATTEMPTS=%q: want a whole number of at least 1", v)
		}
		c.WebhookMaxAttempts = n
	}
	if v := getenv("TICKETD_WEBHOOK_ALLOW_PRIVATE"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("TICKETD_WEBHOOK_ALLOW_PRIVATE=%q: want true or false", v)
		}
		c.WebhookAllowPrivate = b
	}
	return nil
}

// trackerSettings declares the settings of tracker-backed projects and
// reads their variables (DESIGN §16).
func (c *config) trackerSettings(fs *flag.FlagSet, getenv func(string) string) error {
	fs.DurationVar(&c.ReconcileSettle, "reconcile-settle", 2*time.Minute, "how long after an unanswered tracker request ticketd waits for it to land before it may send again (env TICKETD_RECONCILE_SETTLE)")
	fs.DurationVar(&c.TrackerTimeout, "tracker-timeout", 10*time.Second, "bound on one request to a tracker, answer included (env TICKETD_TRACKER_TIMEOUT)")
	for _, v := range []struct {
		name string
		dst  *time.Duration
	}{{"TICKETD_RECONCILE_SETTLE", &c.ReconcileSettle}, {"TICKETD_TRACKER_TIMEOUT", &c.TrackerTimeout}} {
		raw := getenv(v.name)
		if raw == "" {
			continue
		}
		d, err := time.ParseDuration(raw)
		if err != nil || d <= 0 {
			return fmt.Errorf("%s=%q: want a positive duration such as 2m", v.name, raw)
		}
		*v.dst = d
	}
	return nil
}

// checkWebhook validates the webhook settings a flag may have set.
func (c *config) checkWebhook() error {
	if c.WebhookRetryMin <= 0 {
		return fmt.Errorf("--webhook-retry-min %s: want a positive duration such as 5s", c.WebhookRetryMin)
	}
	if c.WebhookMaxAttempts < 1 {
		return fmt.Errorf("--webhook-max-attempts %d: want at least 1", c.WebhookMaxAttempts)
	}
	return nil
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

// checkHTTP validates the listen address and public URL. With --dev the
// address must be loopback: dev mode's secret sits on disk and its token is
// printed, so it must not be reachable from the network.
func (c *config) checkHTTP() error {
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
	// The same check server.New makes, made here so that a bad URL stops
	// start-up before the database is opened.
	if _, err := server.ParsePublicURL(c.PublicURL); err != nil {
		return fmt.Errorf("TICKETD_PUBLIC_URL: %w", err)
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

// checkDB validates the database URL without connecting.
func (c *config) checkDB() error {
	if _, _, err := db.ParseURL(c.DatabaseURL); err != nil {
		return fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
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
