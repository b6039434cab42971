// Package server is ticketd's one HTTP edge, used by the binary and by every
// end-to-end test: one middleware chain (request ID, access log, panic
// recovery, security headers, body limit) in front of the MCP endpoint behind
// bearer-token auth, the operators' REST API, the OAuth Protected Resource
// Metadata that tells clients where to get a token, the web console,
// Prometheus metrics, and health and readiness probes. It holds the guards
// every route may share (Origin and Host, one Authorization header, the
// tenants' limits, the body budget); the /mcp chain is internal/mcpedge's.
package server

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/observe"
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
	// ConsoleSignInCodes lets single-use sign-in links open console
	// sessions (serve --dev's person); nil accepts pasted tokens only.
	ConsoleSignInCodes *console.SignInCodes
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
	w, err := newWiring(cfg)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(MCPPath, nameSpan(MCPPath, w.mcp()))
	mux.Handle(APIPrefix, w.api())
	// Outside every limit and Host check: clients try the path-suffixed
	// form first (resource = the MCP URL), then the root form; both
	// describe the one protected resource. Probes are called by address.
	metadata := w.metadata()
	mux.Handle(MCPResourceMetadataPath, metadata)
	mux.Handle(ResourceMetadataPath, metadata)
	mux.HandleFunc("GET "+HealthPath, health)
	mux.Handle("GET "+ReadyPath, ready(cfg.Ready, w.guards.budget, w.guards.admission, w.logger))
	// Operators' views, behind the Host check that stops DNS rebinding: the
	// console (its own CSP, cross-origin and CSRF checks inside), and the
	// metrics unless they have a listener of their own (which a scraper
	// may reach by address, so any address literal passes).
	mux.Handle(console.Prefix, nameSpan(console.Prefix, w.guards.consoleHost(console.New(console.Config{
		Service: cfg.Service, Verifier: cfg.Verifier, Sessions: cfg.ConsoleSessions, Logger: w.logger.With("component", "console"),
		Secure: strings.HasPrefix(w.public, "https://"), Webhooks: cfg.Webhooks, Approvals: cfg.Service.Approvals(),
		SignInCodes: cfg.ConsoleSignInCodes,
	}))))
	mux.Handle("GET /{$}", http.RedirectHandler(console.Prefix, http.StatusSeeOther))
	if !cfg.MetricsElsewhere {
		mux.Handle("GET "+MetricsPath, w.guards.metricsHost(w.metrics.Handler()))
	}

	// The edge every route shares, outermost first.
	return chain(mux,
		observe.TraceHTTP,
		withRequestID,
		accessLog(w.logger),
		recoverPanics(w.logger),
		securityHeaders,
		limitBody,
	), nil
}

// wiring is what New derives from its Config once, for every route.
type wiring struct {
	cfg     Config
	public  string // cfg.PublicURL, checked
	logger  *slog.Logger
	metrics *observe.Metrics
	// metadataURL is the Protected Resource Metadata every challenge names.
	metadataURL string
	// scopes are the scopes a 401 challenge names (challengeScopes).
	scopes []string
	guards *guards
}

func newWiring(cfg Config) (*wiring, error) {
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
	logger := cmp.Or(cfg.Logger, slog.New(slog.DiscardHandler))
	metrics := cfg.Metrics
	if metrics == nil {
		metrics = observe.New(observe.Options{Logger: logger})
	}
	g, err := newGuards(cfg.Edge, public)
	if err != nil {
		return nil, err
	}
	return &wiring{
		cfg: cfg, public: public, logger: logger, metrics: metrics,
		metadataURL: public + MCPResourceMetadataPath, scopes: challengeScopes(cfg.Edge.ReadOnly), guards: g,
	}, nil
}

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
