// Package server is ticketd's one HTTP edge, used by the binary and by every
// end-to-end test: one middleware chain (request ID, access log, panic
// recovery, security headers, body limit) in front of the MCP endpoint behind
// bearer-token auth, the operators' REST API, the OAuth Protected Resource
// Metadata that tells clients where to get a token, the web console,
// Prometheus metrics, and health and readiness probes.
package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.opentelemetry.io/otel/trace"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/edge"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// Routes. MCPPath is part of every token's audience (PublicURL+MCPPath).
const (
	MCPPath                 = "/mcp"
	ResourceMetadataPath    = "/.well-known/oauth-protected-resource"
	MCPResourceMetadataPath = ResourceMetadataPath + MCPPath
	HealthPath              = "/healthz"
	ReadyPath               = "/readyz"
	APIPrefix               = "/api/v1/"
	MetricsPath             = "/metrics"
)

// MaxBodyBytes bounds every request body, MCP and REST alike. It is large
// enough for every valid ticket even with each character JSON-escaped as a
// surrogate pair (12 bytes for each of the 20000 description characters,
// plus the JSON-RPC envelope), so the limit never refuses valid input and
// length errors come from the service, field by field. Anything bigger is
// refused (413) before it is buffered.
const MaxBodyBytes = 256 << 10

// readyTimeout bounds a readiness check, so a hung database makes /readyz
// answer 503 rather than hang the prober.
const readyTimeout = 2 * time.Second

// Config is what New needs.
type Config struct {
	// Service answers the MCP tools. Required.
	Service *tickets.Service
	// Verifier checks the bearer token of every /mcp request. Required.
	Verifier *authn.Verifier
	// PublicURL is the origin clients reach this server at, such as
	// http://127.0.0.1:8080 or https://tickets.example.com, without a path.
	// The MCP resource (and so the tokens' audience) is PublicURL+"/mcp".
	// Required.
	PublicURL string
	// Issuer is the authorization server that issues tokens for this
	// resource; Protected Resource Metadata names it. Required.
	Issuer string
	// AuthorizationServers are the issuer URLs Protected Resource Metadata
	// names as authorization_servers (TICKETD_OAUTH_AUTHORIZATION_SERVERS),
	// so OAuth clients find where to get a token; empty names Issuer if it
	// is a URL.
	AuthorizationServers []string
	// Logger receives the access log and the tool-call log; nil discards.
	Logger *slog.Logger
	// Ready reports whether the server can serve (a database ping); /readyz
	// answers 503 while it fails. Nil means always ready. It must not wait
	// behind the service's connection pool: give it a pool of its own.
	Ready func(ctx context.Context) error
	// Metrics counts every request (REST by route, MCP by tool) and is
	// served at /metrics. For operation outcomes, build Service with
	// tickets.Options{OnWrite: ObserveWrites(Metrics)}. Nil makes a private
	// one that counts requests only.
	Metrics *observe.Metrics
	// MetricsElsewhere leaves /metrics off this handler, for when it is
	// served on a listener of its own (TICKETD_METRICS_ADDR).
	MetricsElsewhere bool
	// Edge configures the checks in front of /mcp and /api/v1 (docs/architecture.md#the-edge-in-the-order-it-is-wired).
	Edge Edge
	// Webhooks serves the REST webhook routes; nil leaves them out.
	Webhooks *webhooks.Service
	// ConsoleSessions keeps the web console's sessions
	// (console.NewSessions over the service's database). Required.
	ConsoleSessions *console.Sessions
}

// Edge is what the edge in front of /mcp and /api/v1 needs beyond the
// public URL. The zero value is the documented defaults.
type Edge struct {
	// AllowedOrigins are origins besides the public URL's that may call
	// (TICKETD_ALLOWED_ORIGINS).
	AllowedOrigins []string
	// AllowedHosts are Host names besides the public URL's host the server
	// answers to (TICKETD_ALLOWED_HOSTS).
	AllowedHosts []string
	// Limits are the per-tenant rate limits and concurrency cap; its zero
	// rates turn the buckets off (TICKETD_RATE_LIMIT_*,
	// TICKETD_TENANT_CONCURRENCY).
	Limits limits.Config
	// PoolSize is the size of the service's database connection pool, if
	// known. The tenant concurrency cap must then sit below it (New refuses
	// one that does not), and a zero Limits.Concurrency is derived from it
	// (limits.ConcurrencyFor), so one tenant cannot hold every connection.
	PoolSize int
	// ReadOnly serves read tools only and refuses REST writes
	// (TICKETD_READ_ONLY).
	ReadOnly bool
	// WorkSlots bounds the writes and list pages run at once across all
	// tenants, shared out in turn among the tenants waiting
	// (TICKETD_WORK_SLOTS); limits.WorkSlotsFor(PoolSize) if zero. Each
	// tenant may have as many calls waiting as its concurrency cap allows
	// (at least twice the slots); the rest are refused.
	WorkSlots int
	// BodyBudget bounds the request body bytes held at once across all
	// requests; DefaultBodyBudget if zero. One tenant may hold a quarter
	// of it (BodyShareOf).
	BodyBudget int64
}

// DefaultBodyBudget bounds the body bytes all requests hold at once: 64
// bodies of the largest size. Bytes are counted as they arrive, so stalled
// uploads hold what they sent, and one tenant holds at most its share.
const DefaultBodyBudget = 64 * MaxBodyBytes

// BodyShareOf is one tenant's share of a body budget: a quarter, so a
// tenant's stalled uploads (16 bodies of the largest size by default) leave
// three quarters to the others, and only several tenants together can spend
// the budget.
func BodyShareOf(budget int64) int64 { return max(MaxBodyBytes, budget/4) }

// challengeScopes are the scopes a 401 challenge names: what an agent needs
// to use every tool (docs/contract.md#mcp-tools), and all an MCP client may
// ask for; a read-only server serves read tools only, so it names the read
// scope alone.
func challengeScopes(readOnly bool) []string {
	if readOnly {
		return []string{authn.ScopeRead}
	}
	return []string{authn.ScopeRead, authn.ScopeWrite}
}

// New returns the HTTP handler serving:
//
//   - /mcp: the MCP tools over stateless Streamable HTTP, for any valid
//     bearer token (each tool checks its own scope, so a read-only token
//     can still list). Missing or invalid tokens get 401 with
//     WWW-Authenticate: Bearer resource_metadata="…".
//   - /.well-known/oauth-protected-resource/mcp and
//     /.well-known/oauth-protected-resource: RFC 9728 metadata whose
//     resource is PublicURL+"/mcp".
//   - /healthz (always 200) and /readyz (200, or 503 while Ready fails).
//   - /api/v1/: the operators' REST API (internal/rest) over the same
//     service and verifier.
//   - /console/: the web console for people (internal/console) over the
//     same service and verifier; / redirects to it.
//   - /metrics: Prometheus metrics, unless MetricsElsewhere.
//
// Each request is one trace span when tracing is set up (observe.Setup).
// Every response carries an X-Request-ID (the caller's, if it sent a sane
// one); every request is access-logged once, without its headers, so tokens
// never reach the log.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Service == nil:
		return nil, errors.New("server: Config.Service is required")
	case cfg.Verifier == nil:
		return nil, errors.New("server: Config.Verifier is required")
	case cfg.ConsoleSessions == nil:
		return nil, errors.New("server: Config.ConsoleSessions is required")
	case cfg.Issuer == "":
		return nil, errors.New("server: Config.Issuer is required")
	}
	public, err := ParsePublicURL(cfg.PublicURL)
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	resource := public + MCPPath
	metadataURL := public + MCPResourceMetadataPath
	scopes := challengeScopes(cfg.Edge.ReadOnly)

	metrics := cfg.Metrics
	if metrics == nil {
		metrics = observe.New(observe.Options{Logger: logger})
	}
	tenantLimits := cfg.Edge.Limits
	if pool := cfg.Edge.PoolSize; pool > 0 {
		if tenantLimits.Concurrency == 0 {
			tenantLimits.Concurrency = limits.ConcurrencyFor(pool)
		}
		if err := limits.CheckConcurrency(tenantLimits.Concurrency, pool); err != nil {
			return nil, fmt.Errorf("server: tenant limits: %w", err)
		}
	}
	tenants, err := limits.New(tenantLimits)
	if err != nil {
		return nil, fmt.Errorf("server: tenant limits: %w", err)
	}
	bodyBudget := cmp.Or(cfg.Edge.BodyBudget, DefaultBodyBudget)
	budget, err := limits.NewBodies(bodyBudget, min(bodyBudget, BodyShareOf(bodyBudget)), min(bodyBudget, MaxBodyBytes))
	if err != nil {
		return nil, fmt.Errorf("server: body budget: %w", err)
	}
	origin, err := edge.Origin(edge.OriginOptions{
		PublicURL: public, AllowedOrigins: cfg.Edge.AllowedOrigins, AllowedHosts: cfg.Edge.AllowedHosts, Reject: noteMCPRefusal,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	apiOrigin, err := edge.Origin(edge.OriginOptions{
		PublicURL: public, AllowedOrigins: cfg.Edge.AllowedOrigins, AllowedHosts: cfg.Edge.AllowedHosts, Reject: rest.Reject,
	})
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	hostOpts := edge.OriginOptions{PublicURL: public, AllowedHosts: cfg.Edge.AllowedHosts}
	consoleHost, err := edge.Host(hostOpts)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	hostOpts.AnyAddress = true
	metricsHost, err := edge.Host(hostOpts)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}

	// One server for all requests: stateless serving keeps nothing in it
	// between calls, and the handler asks for it twice per request.
	// Each tenant's calls may all wait their turn, up to its concurrency
	// cap: the cap refuses the excess before the body is read, which costs
	// less than a refusal here, after it.
	slots := cmp.Or(cfg.Edge.WorkSlots, limits.WorkSlotsFor(cfg.Edge.PoolSize))
	work, err := limits.NewWork(slots, max(2*slots, tenantLimits.Concurrency))
	if err != nil {
		return nil, fmt.Errorf("server: work slots: %w", err)
	}
	toolOpts := mcptools.Options{ReadOnly: cfg.Edge.ReadOnly, Metrics: metrics, Work: work, HoldRefusal: tenants.Hold}
	mcpServer := mcptools.NewServer(cfg.Service, logger, toolOpts)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{
		// Stateless: any replica answers any request, and protocol
		// 2026-07-28 (sessionless) is served as well as older clients.
		Stateless: true,
		Logger:    logger.With("component", "mcp"),
		// edge.Origin checks Host in every mode, in front of this; the
		// SDK's own guard would refuse a proxy that connects over loopback
		// with the public Host.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBodyBytes,
		// One JSON body per answer instead of an SSE stream: a stateless
		// server sends nothing before the result (no progress, no server
		// requests), and SSE framing and its flushes cost 10-15% of the CPU
		// per call (docs/perf.md). Clients must accept both anyway.
		JSONResponse: true,
	})
	requireToken := auth.RequireBearerToken(mcptools.TokenVerifier(cfg.Verifier), &auth.RequireBearerTokenOptions{
		// No Scopes: they are endpoint-wide; StepUp checks each tool's.
		ResourceMetadataURL: metadataURL,
	})
	metadata := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             resource,
		AuthorizationServers: authorizationServers(cfg.Issuer, cfg.AuthorizationServers),
		// Only what an MCP client may usefully ask for: no tool needs
		// tickets:admin, which is for operators' tokens on /api/v1.
		ScopesSupported:        scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "ticketd",
	})
	mcpTenant := func(ctx context.Context) (string, bool) {
		p, ok := mcptools.PrincipalFrom(auth.TokenInfoFromContext(ctx))
		return p.Tenant, ok
	}
	mcpRequestTenant := func(r *http.Request) (string, bool) { return mcpTenant(r.Context()) }
	limitMCP := edge.MCPLimits(edge.MCPLimitsOptions{Limits: tenants, Tenant: mcpTenant, KindFor: toolKind(toolOpts)})
	restTenant := func(r *http.Request) (string, bool) {
		p, ok := authn.PrincipalFromContext(r.Context())
		return p.Tenant, ok
	}
	restAPI := rest.NewRouter(rest.Config{
		Service: cfg.Service, Verifier: cfg.Verifier, ResourceMetadataURL: metadataURL,
		ChallengeScopes: scopes, Metrics: metrics, Webhooks: cfg.Webhooks,
		// The tenant's slot, then its body bytes: as on /mcp.
		AfterAuth: []func(http.Handler) http.Handler{
			edge.Limit(edge.LimitOptions{Limits: tenants, Tenant: restTenant, Reject: rest.Reject}),
			edge.Bodies(edge.BodiesOptions{Budget: budget, Tenant: restTenant, MaxBytes: MaxBodyBytes, Reject: rest.Reject}),
		},
	})

	mux := http.NewServeMux()
	// /mcp, outermost first, in the order package edge documents.
	mux.Handle(MCPPath, nameSpan(MCPPath, chain(mcpHandler,
		countRefusals(metrics, mcptools.ScopeFor(toolOpts)),
		origin,
		edge.SingleAuthorization(nil),
		scopedChallenge(scopes),
		requireToken,
		noteCaller,
		edge.Concurrency(edge.ConcurrencyOptions{Limits: tenants, Tenant: mcpRequestTenant, Reject: edge.MCPReject}),
		edge.Bodies(edge.BodiesOptions{Budget: budget, Tenant: mcpRequestTenant, MaxBytes: MaxBodyBytes, Reject: edge.MCPReject}),
		edge.EarlyLimits(edge.EarlyLimitsOptions{Limits: tenants, Tenant: mcpTenant, KindFor: toolKind(toolOpts),
			ScopeFor: mcptools.ScopeFor(toolOpts), Scopes: mcptools.TokenScopes}),
		// After MCPBody, so its refusal answers the request's id.
		edge.MCPBody(edge.MCPBodyOptions{MaxBytes: MaxBodyBytes}),
		requireTicketdScope(metadataURL, scopes),
		edge.StepUp(edge.StepUpOptions{ScopeFor: mcptools.ScopeFor(toolOpts), Scopes: mcptools.TokenScopes, ResourceMetadataURL: metadataURL}),
		limitMCP,
	)))
	// /api/v1: the same outer checks; the tenant limits and the body
	// budget run inside the REST router, after it authenticates
	// (AfterAuth).
	apiEdge := []func(http.Handler) http.Handler{
		apiOrigin,
		edge.SingleAuthorization(rest.Reject),
	}
	if cfg.Edge.ReadOnly {
		apiEdge = append(apiEdge, refuseWrites)
	}
	mux.Handle(APIPrefix, countGuarded(metrics, restAPI, apiEdge...))
	// Outside every limit and Host check: clients try the path-suffixed
	// form first (resource = the MCP URL), then the root form; both
	// describe the one protected resource. Probes are called by address.
	mux.Handle(MCPResourceMetadataPath, metadata)
	mux.Handle(ResourceMetadataPath, metadata)
	mux.HandleFunc("GET "+HealthPath, health)
	mux.Handle("GET "+ReadyPath, ready(cfg.Ready, budget, logger))
	// Operators' views, behind the Host check that stops DNS rebinding: the
	// console (its own CSP, cross-origin and CSRF checks inside), and the
	// metrics unless they have a listener of their own (which a scraper
	// may reach by address, so any address literal passes).
	mux.Handle(console.Prefix, nameSpan(console.Prefix, consoleHost(console.New(console.Config{
		Service: cfg.Service, Verifier: cfg.Verifier, Sessions: cfg.ConsoleSessions, Logger: logger.With("component", "console"),
		Secure: strings.HasPrefix(public, "https://"), Webhooks: cfg.Webhooks, Approvals: cfg.Service.Approvals(),
	}))))
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusSeeOther))
	if !cfg.MetricsElsewhere {
		mux.Handle("GET "+MetricsPath, metricsHost(metrics.Handler()))
	}

	// The edge every route shares, outermost first.
	return chain(mux,
		observe.TraceHTTP,
		withRequestID,
		accessLog(logger),
		recoverPanics(logger),
		securityHeaders,
		limitBody,
	), nil
}

// ParsePublicURL checks that raw is an http(s) origin and returns it without
// a trailing slash. A path is refused because the well-known metadata
// locations of RFC 9728 are derived from the resource's path, and ticketd
// serves them only at the root.
func ParsePublicURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes raw, credentials included: say only what is wrong.
		return "", errors.New("public URL does not parse as a URL")
	}
	shown := u.Redacted()
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", fmt.Errorf("public URL %q must start with http:// or https://", shown)
	case u.Host == "":
		return "", fmt.Errorf("public URL %q has no host", shown)
	case strings.TrimSuffix(u.Path, "/") != "", u.RawQuery != "", u.Fragment != "", u.User != nil:
		return "", fmt.Errorf("public URL %q must be an origin such as https://tickets.example.com, without path, query or credentials", shown)
	}
	return u.Scheme + "://" + u.Host, nil
}

// IsLoopbackHost reports whether host is localhost (any case) or a loopback
// address, for dev mode's bind check (cmd/ticketd/config.go). The SDK's own
// DNS-rebinding guard is off (DisableLocalhostProtection, in New):
// edge.Origin checks Host instead, with its own copy of this test
// (isLoopback in internal/edge/origin.go), since edge cannot import server.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers 200 while check passes and 503 while it fails, or while the
// body budget every tenant shares is spent (so a load balancer sends new
// requests to a replica that can take them; one tenant alone cannot spend
// it). The cause is logged, not shown: probes need the status, and the
// error may describe the database.
func ready(check func(context.Context) error, bodies *limits.Bodies, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bodies.Spent() {
			logger.WarnContext(r.Context(), "not ready: the request body budget is spent", "request_id", r.Header.Get(RequestIDHeader))
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "busy"})
			return
		}
		if check != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := check(ctx); err != nil {
				logger.WarnContext(r.Context(), "not ready", "error", err, "request_id", r.Header.Get(RequestIDHeader))
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a failed write has no one left to tell
}

// authorizationServers lists the configured authorization servers in
// Protected Resource Metadata or, without any, the issuer, only when it is
// an absolute http(s) URL, as RFC 9728 requires: a bare name such as the
// dev issuer "ticketd-dev" names no server a client could contact.
func authorizationServers(issuer string, configured []string) []string {
	if len(configured) > 0 {
		return configured
	}
	if !isHTTPURL(issuer) {
		return nil
	}
	return []string{issuer}
}

// isHTTPURL reports whether s is an absolute http(s) URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// ParseAuthorizationServers parses TICKETD_OAUTH_AUTHORIZATION_SERVERS:
// comma-separated issuer URLs, each an absolute http(s) URL.
func ParseAuthorizationServers(raw string) ([]string, error) {
	var out []string
	for _, s := range strings.Split(raw, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !isHTTPURL(s) {
			return nil, fmt.Errorf("authorization server %q is not an absolute http(s) URL", s)
		}
		out = append(out, s)
	}
	return out, nil
}

// nameSpan names the request's trace span after route, for the handlers
// outside the REST router (which names spans after its own patterns): a
// raw path would make one span name per ticket.
func nameSpan(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			span.SetName(r.Method + " " + route)
		}
		next.ServeHTTP(w, r)
	})
}

// ObserveWrites returns the tickets.Options.OnWrite hook that counts every
// write in m's ticketd_operations_total by action and outcome, classifying
// its error with the contract's one classifier.
func ObserveWrites(m *observe.Metrics) func(action string, replayed bool, err error) {
	return func(action string, replayed bool, err error) {
		m.OperationResult(action, string(errcode.Of(err)), replayed)
	}
}
