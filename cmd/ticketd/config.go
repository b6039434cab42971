package main

import (
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/tracker"
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
	groupEdge                      // Origin/Host allow-lists, tenant limits
	groupWebhook                   // webhook delivery
	groupPublic                    // the public URL alone, for stdio: it derives the audience but listens nowhere
	groupMint                      // what minting a token needs: issuer, audience, HS256 secret, tenant claim
	groupReplica                   // the read replica (serve and stdio, which read)
	groupApprove                   // approval of consequential writes
	groupTracker                   // tracker-backed projects: credentials, endpoints, bounds (every command that opens the store)
	groupTools                     // the MCP toolsets and read-only (serve and stdio)
)

// Defaults that also appear in help and error messages.
const (
	defaultAddr        = "127.0.0.1:8080"
	defaultDatabaseURL = "sqlite://ticketd.db"
	defaultDataDir     = ".ticketd"
	devIssuer          = "ticketd-dev"
	devDatabaseFile    = "ticketd.db"
	// minSecret is the HS256 rule for every HMAC key setting (cursor,
	// approval): a key at least as long as its hash output.
	minSecret = 32
)

// config is every setting of every command. Empty strings mean "derive the
// default", which depends on other settings (the audience on the public URL,
// the database on --dev), so defaults are resolved after parsing.
type config struct {
	Addr          string
	ShutdownGrace time.Duration
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
	// AuthorizationServers is TICKETD_OAUTH_AUTHORIZATION_SERVERS, parsed
	// by server.ParseAuthorizationServers.
	AuthorizationServers []string

	// ReadDatabaseURL is the optional read replica (docs/scale.md).
	ReadDatabaseURL string

	// The edge (docs/architecture.md#the-edge-in-the-order-it-is-wired),
	// checked by edge(). Limits.Concurrency is negative for no cap.
	AllowedOrigins []string
	AllowedHosts   []string
	Limits         limits.Config
	WorkSlots      int // 0: derived (limits.WorkSlotsFor)
	AdmissionWait  time.Duration
	TenantQueue    int
	ReadOnly       bool
	// Toolsets are the MCP tools served (TICKETD_TOOLSETS), over HTTP and
	// stdio alike.
	Toolsets mcptools.Toolsets

	// Approval (docs/contract.md#approval), parsed and checked by approvalOptions().
	Approval              string
	ApprovalBulkThreshold string
	ApprovalSecret        string
	ApprovalChannels      string
	ApprovalFourEyes      string
	ApprovalTTL           time.Duration

	WebhookRetryMin     time.Duration
	WebhookMaxAttempts  int
	WebhookAllowPrivate bool
	// Tracker-backed projects (docs/contract.md#tracker-backed-projects); zero takes the defaults.
	ReconcileSettle    time.Duration
	TrackerTimeout     time.Duration
	TrackerConcurrency int
	// The per-host bounds of tracker requests (github.Options).
	TrackerHostConcurrency int
	TrackerBreakerFailures int
	TrackerBreakerCoolDown time.Duration
	// TrackerCredentials, TrackerHosts and TrackerAllowPrivate are the
	// tracker boundary (docs/trackers.md).
	TrackerCredentials  tracker.Credentials
	TrackerHosts        []string
	TrackerAllowPrivate bool
	WebhookConcurrency  int
	WebhookRescueAfter  time.Duration

	// DBSession bounds each PostgreSQL session (db.Session).
	DBSession db.Session

	// getenv reads the environment the settings came from; tracker
	// credentials' variables are read through it when a tracker is used.
	getenv func(string) string

	// derivedPublicURL records that PublicURL came from Addr, which is
	// wrong for clients when Addr is a wildcard such as 0.0.0.0.
	derivedPublicURL bool
}

// setting is one setting: the groups of the commands that use it, its
// variable (empty for a flag alone), its flag, its built-in default (empty:
// derived later), what it means, and into, which decodes its text (from the
// variable or the flag) into the config and says what it wants when the text
// will not do. A bool setting is a switch: --read-only alone means true. A
// usage that names the value's kind in backquotes shows it after the flag in
// help.
type setting struct {
	group group
	env   string
	flag  string
	def   string
	usage string
	into  func(*config) decoder
}

// settings is the configuration surface in one place; help text is
// generated from it, so flag, variable and default never disagree, and every
// value is decoded and checked the same way.
var settings = []setting{
	{groupHTTP, "TICKETD_ADDR", "addr", defaultAddr, "listen address host:port", func(c *config) decoder { return stringInto(&c.Addr) }},
	{groupHTTP, "TICKETD_SHUTDOWN_GRACE", "shutdown-grace", "15s", "how long (a `duration`) the calls in flight at SIGTERM get to be answered before the server exits", func(c *config) decoder { return positiveDurationInto(&c.ShutdownGrace) }},
	{groupHTTP | groupPublic, "TICKETD_PUBLIC_URL", "public-url", "", "URL clients reach this server at (default http://ADDR)", func(c *config) decoder { return stringInto(&c.PublicURL) }},
	{groupDB, "TICKETD_DATABASE_URL", "database-url", "", "postgres://USER:PASS@HOST:PORT/DB?sslmode=… or sqlite://PATH (default " + defaultDatabaseURL + "; with --dev sqlite://DATA_DIR/" + devDatabaseFile + ")", func(c *config) decoder { return stringInto(&c.DatabaseURL) }},
	{groupReplica, "TICKETD_READ_DATABASE_URL", "read-database-url", "", "optional PostgreSQL hot standby for lists, search and history; a query runs there only when the standby has replayed all the primary has committed, else on the primary", func(c *config) decoder { return stringInto(&c.ReadDatabaseURL) }},
	{groupAuth | groupMint, "TICKETD_JWT_ISSUER", "jwt-issuer", "", "iss claim tokens must carry (required; with --dev " + devIssuer + ")", func(c *config) decoder { return stringInto(&c.Issuer) }},
	{groupAuth | groupMint, "TICKETD_JWT_AUDIENCE", "jwt-audience", "", "aud claim tokens must carry (default PUBLIC_URL/mcp)", func(c *config) decoder { return stringInto(&c.Audience) }},
	{groupAuth, "TICKETD_JWT_JWKS_URL", "jwt-jwks-url", "", "key source: identity provider JWK Set URL", func(c *config) decoder { return stringInto(&c.JWKSURL) }},
	{groupAuth, "TICKETD_JWT_PUBLIC_KEY_FILE", "jwt-public-key-file", "", "key source: PEM public key file (RSA, ECDSA or Ed25519)", func(c *config) decoder { return stringInto(&c.PublicKeyFile) }},
	{groupAuth | groupMint, "TICKETD_JWT_HS256_SECRET", "jwt-hs256-secret", "", "key source: shared HS256 secret, at least 32 bytes (prefer the variable: flags show in ps)", func(c *config) decoder { return stringInto(&c.HS256Secret) }},
	{groupAuth | groupMint, "TICKETD_JWT_TENANT_CLAIM", "jwt-tenant-claim", "tenant_id", "claim that carries the tenant", func(c *config) decoder { return stringInto(&c.TenantClaim) }},
	{groupLog, "TICKETD_LOG_FORMAT", "log-format", "text", "log format: text or json", func(c *config) decoder { return stringInto(&c.LogFormat) }},
	{groupLog, "TICKETD_LOG_LEVEL", "log-level", "info", "log level: debug, info, warn or error", func(c *config) decoder { return stringInto(&c.LogLevel) }},
	{groupCursor, "TICKETD_CURSOR_SECRET", "cursor-secret", "", "key signing list cursors, at least 32 bytes; give replicas the same one (default: with --dev kept in DATA_DIR, else random per process)", func(c *config) decoder { return stringInto(&c.CursorSecret) }},
	{groupDev, "TICKETD_DATA_DIR", "data-dir", defaultDataDir, "where --dev keeps its secret and SQLite database", func(c *config) decoder { return stringInto(&c.DataDir) }},
	{groupDev, "", "dev", "false", "development mode: HS256 secret generated in DATA_DIR (kept across starts), issuer " + devIssuer +
		", SQLite in DATA_DIR unless TICKETD_DATABASE_URL is set, tenant " + devTenant + " seeded, loopback only", func(c *config) decoder { return boolInto(&c.Dev) }},
	{groupMetrics, "TICKETD_METRICS_ADDR", "metrics-addr", "", "serve /metrics on this host:port of its own instead of on TICKETD_ADDR (keeps it off a public listener)", func(c *config) decoder { return stringInto(&c.MetricsAddr) }},
	// The edge, in one block: edge() checks these against the database pool.
	{groupEdge, "TICKETD_OAUTH_AUTHORIZATION_SERVERS", "oauth-authorization-servers", "", "comma-separated issuer URLs of the OAuth authorization servers whose tokens ticketd verifies, named in Protected Resource Metadata so OAuth clients find them (default: TICKETD_JWT_ISSUER if it is a URL)", func(c *config) decoder { return urlListInto(&c.AuthorizationServers) }},
	{groupEdge, "TICKETD_ALLOWED_ORIGINS", "allowed-origins", "", "comma-separated origins (scheme://host[:port]) besides the public URL's that browsers may call from", func(c *config) decoder { return listInto(&c.AllowedOrigins) }},
	{groupEdge, "TICKETD_ALLOWED_HOSTS", "allowed-hosts", "", "comma-separated Host names besides the public URL's host the server answers to (e.g. an internal name behind a proxy)", func(c *config) decoder { return listInto(&c.AllowedHosts) }},
	{groupEdge, "TICKETD_RATE_LIMIT_WRITES", "rate-limit-writes", "50", "writes per second per tenant (0 = no limit)", func(c *config) decoder { return rateInto(&c.Limits.WritesPerSecond) }},
	{groupEdge, "TICKETD_RATE_LIMIT_READS", "rate-limit-reads", "200", "reads per second per tenant (0 = no limit)", func(c *config) decoder { return rateInto(&c.Limits.ReadsPerSecond) }},
	{groupEdge, "TICKETD_RATE_LIMIT_BURST", "rate-limit-burst", "0", "requests a tenant may send at once above its rate (0 = twice the rate)", func(c *config) decoder { return atLeastInto(&c.Limits.Burst, 0) }},
	{groupEdge, "TICKETD_TENANT_CONCURRENCY", "tenant-concurrency", "64", "the `count` of requests per tenant reading their body at once (a bound on stalled uploads; 429 past it)", func(c *config) decoder { return concurrencyInto(&c.Limits.Concurrency) }},
	{groupEdge, "TICKETD_WORK_SLOTS", "work-slots", "0", "the `count` of writes and list pages run at once across all tenants; a tenant alone may take them all, under contention they are shared out in turn (0 = two per core, below the database pool)", func(c *config) decoder { return atLeastInto(&c.WorkSlots, 0) }},
	{groupEdge, "TICKETD_ADMISSION_WAIT", "admission-wait", "10s", "how long (a `duration`) a call waits its turn for a work slot before it is refused rate_limited", func(c *config) decoder { return positiveDurationInto(&c.AdmissionWait) }},
	{groupEdge, "TICKETD_TENANT_QUEUE", "tenant-queue", "256", "the `count` of one tenant's calls that may wait their turn at once; past it a call is refused rate_limited", func(c *config) decoder { return atLeastInto(&c.TenantQueue, 1) }},
	{groupApprove, "TICKETD_APPROVAL", "approval", "on", "on: urgent tickets and large bulk updates need a person's yes before they are written; off: nobody is asked", func(c *config) decoder { return stringInto(&c.Approval) }},
	{groupApprove, "TICKETD_APPROVAL_BULK_THRESHOLD", "approval-bulk-threshold", "10", "bulk updates changing at least this many tickets need approval", func(c *config) decoder { return stringInto(&c.ApprovalBulkThreshold) }},
	{groupApprove, "TICKETD_APPROVAL_CHANNELS", "approval-channels", "form,url", "how an agent's client may ask its person: form,url (a form the MCP host shows its user, trusting the host, else the approval URL) or url (always the approval URL, where a person with tickets:approve decides)", func(c *config) decoder { return stringInto(&c.ApprovalChannels) }},
	{groupApprove, "TICKETD_APPROVAL_FOUR_EYES", "approval-four-eyes", "off", "on: the person who approves must be another subject than the one whose token asked (no form is then offered: the approval URL only); off: anyone with tickets:approve", func(c *config) decoder { return stringInto(&c.ApprovalFourEyes) }},
	{groupApprove, "TICKETD_APPROVAL_TTL", "approval-ttl", "5m", "how long (a `duration`) a person has to answer, and an approval given stays usable", func(c *config) decoder { return positiveDurationInto(&c.ApprovalTTL) }},
	{groupApprove, "TICKETD_APPROVAL_SECRET", "approval-secret", "", "key signing approval request states, at least 32 bytes; give replicas the same one (default: with --dev kept in DATA_DIR, else random per process)", func(c *config) decoder { return stringInto(&c.ApprovalSecret) }},
	{groupToken, "TICKETD_TOKEN", "token", "", "bearer token whose principal the stdio session acts as (required; prefer the variable)", func(c *config) decoder { return stringInto(&c.Token) }},
	{groupMigrate, "TICKETD_MIGRATE", "migrate", "true", "apply migrations at start", func(c *config) decoder { return boolInto(&c.Migrate) }},
	{groupTools, "TICKETD_TOOLSETS", "toolsets", mcptools.DefaultToolsets, "comma-separated sets of MCP tools to serve: tickets, comments, links, bulk, people, or all; every tool offered costs every client context on every turn", func(c *config) decoder { return toolsetsInto(&c.Toolsets) }},
	{groupTools, "TICKETD_READ_ONLY", "read-only", "false", "serve the read tools only and refuse REST writes (serve and stdio)", func(c *config) decoder { return boolInto(&c.ReadOnly) }},
	{groupWebhook, "TICKETD_WEBHOOK_RETRY_MIN", "webhook-retry-min", "5s", "the delay (a `duration`) before a webhook delivery's first retry; later ones double, with jitter", func(c *config) decoder { return positiveDurationInto(&c.WebhookRetryMin) }},
	{groupWebhook, "TICKETD_WEBHOOK_MAX_ATTEMPTS", "webhook-max-attempts", "12", "the `count` of attempts of one webhook delivery before it is failed", func(c *config) decoder { return atLeastInto(&c.WebhookMaxAttempts, 1) }},
	{groupWebhook, "TICKETD_WEBHOOK_ALLOW_PRIVATE", "webhook-allow-private", "false", "allow http:// and loopback or private webhook URLs; --dev allows loopback", func(c *config) decoder { return boolInto(&c.WebhookAllowPrivate) }},
	{groupTracker, "TICKETD_RECONCILE_SETTLE", "reconcile-settle", "2m", "how long (a `duration`) after an unanswered tracker request ticketd waits for it to land before it may send again", func(c *config) decoder { return positiveDurationInto(&c.ReconcileSettle) }},
	{groupTracker, "TICKETD_TRACKER_CONCURRENCY", "tracker-concurrency", "4", "the `count` of one tenant's tracker requests in flight at once; a request waiting on a tracker holds no work slot", func(c *config) decoder { return atLeastInto(&c.TrackerConcurrency, 1) }},
	{groupTracker, "TICKETD_TRACKER_HOST_CONCURRENCY", "tracker-host-concurrency", "16", "the `count` of tracker requests in flight at once to one tracker host, all tenants together", func(c *config) decoder { return atLeastInto(&c.TrackerHostConcurrency, 1) }},
	{groupTracker, "TICKETD_TRACKER_BREAKER_FAILURES", "tracker-breaker-failures", "5", "the `count` of requests in a row a tracker host may leave unanswered (timeout, failed connection, 5xx) before its breaker opens and nothing more is sent to it", func(c *config) decoder { return atLeastInto(&c.TrackerBreakerFailures, 1) }},
	{groupTracker, "TICKETD_TRACKER_BREAKER_COOLDOWN", "tracker-breaker-cooldown", "30s", "how long (a `duration`) an open tracker breaker sends nothing before one probe request may go", func(c *config) decoder { return positiveDurationInto(&c.TrackerBreakerCoolDown) }},
	{groupTracker, "TICKETD_TRACKER_TIMEOUT", "tracker-timeout", "10s", "the bound (a `duration`) on one request to a tracker, answer included", func(c *config) decoder { return positiveDurationInto(&c.TrackerTimeout) }},
	{groupTracker, "TICKETD_TRACKER_CREDENTIALS", "tracker-credentials", "", "comma-separated NAME=ENV_VAR[@tenant|tenant…]: the tracker tokens projects may name as backend.credential, each in its variable, optionally only for those tenants; ticketd reads no other variable for a tracker, and never a TICKETD_* one (docs/trackers.md)", func(c *config) decoder { return credentialsInto(&c.TrackerCredentials) }},
	{groupTracker, "TICKETD_TRACKER_HOSTS", "tracker-hosts", "api.github.com,*.atlassian.net", "comma-separated hosts a tracker's api_url may name; *.example.com is any name below example.com (--dev: any host)", func(c *config) decoder { return hostsInto(&c.TrackerHosts) }},
	{groupTracker, "TICKETD_TRACKER_ALLOW_PRIVATE", "tracker-allow-private", "off", "on: a listed tracker host may be on a private or loopback address, reached over https or plain http; link-local and metadata addresses stay refused", func(c *config) decoder { return boolInto(&c.TrackerAllowPrivate) }},
	{groupWebhook, "TICKETD_WEBHOOK_CONCURRENCY", "webhook-concurrency", "32", "the `count` of webhook deliveries one replica sends at once; while others wait a tenant holds at most three quarters of them, a subscription half; a receiver that answers quickly borrows idle ones, all but an eighth", func(c *config) decoder { return atLeastInto(&c.WebhookConcurrency, 1) }},
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
