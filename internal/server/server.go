// Package server is ticketd's one HTTP edge, used by the binary and by every
// end-to-end test: one middleware chain (request ID, access log, panic
// recovery, security headers, body limit) in front of the MCP endpoint behind
// bearer-token auth, the operators' REST API, the OAuth Protected Resource
// Metadata that tells clients where to get a token, and health and readiness
// probes.
package server

import (
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

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/mcptools"
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
	// Logger receives the access log and the tool-call log; nil discards.
	Logger *slog.Logger
	// Ready reports whether the server can serve (a database ping); /readyz
	// answers 503 while it fails. Nil means always ready.
	Ready func(ctx context.Context) error
	// Webhooks serves the REST webhook routes; nil leaves them out.
	Webhooks *webhooks.Service
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
//
// Every response carries an X-Request-ID (the caller's, if it sent a sane
// one); every request is access-logged once, without its headers, so tokens
// never reach the log.
func New(cfg Config) (http.Handler, error) {
	switch {
	case cfg.Service == nil:
		return nil, errors.New("server: Config.Service is required")
	case cfg.Verifier == nil:
		return nil, errors.New("server: Config.Verifier is required")
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

	// One server for all requests: stateless serving keeps nothing in it
	// between calls, and the handler asks for it twice per request.
	mcpServer := mcptools.NewServer(cfg.Service, logger)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, &mcp.StreamableHTTPOptions{
		// Stateless: any replica answers any request, and protocol
		// 2026-07-28 (sessionless) is served as well as older clients.
		Stateless: true,
		Logger:    logger.With("component", "mcp"),
		// The DNS-rebinding guard refuses a loopback connection whose Host
		// is not loopback. It protects a server that is itself only on
		// loopback (dev mode), so it stays on when the public URL is
		// loopback; with a public name, the server sits behind a proxy
		// that may well connect over loopback with the public Host, and
		// the guard would refuse every request. /mcp needs a bearer token
		// either way, which a rebinding page cannot supply.
		DisableLocalhostProtection: !IsLoopbackHost(publicHost(public)),
		MaxRequestBodyBytes:        MaxBodyBytes,
	})
	requireToken := auth.RequireBearerToken(mcptools.TokenVerifier(cfg.Verifier), &auth.RequireBearerTokenOptions{
		// No Scopes: a valid token is enough to reach the tools, which
		// answer a missing scope with a forbidden tool error.
		ResourceMetadataURL: metadataURL,
	})
	metadata := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   authorizationServers(cfg.Issuer),
		ScopesSupported:        []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "ticketd",
	})

	mux := http.NewServeMux()
	mux.Handle(MCPPath, requireToken(mcpHandler))
	// Clients try the path-suffixed form first (resource = the MCP URL),
	// then the root form; both describe the one protected resource.
	mux.Handle(MCPResourceMetadataPath, metadata)
	mux.Handle(ResourceMetadataPath, metadata)
	mux.HandleFunc("GET "+HealthPath, health)
	mux.Handle("GET "+ReadyPath, ready(cfg.Ready, logger))
	mux.Handle(APIPrefix, rest.NewRouter(rest.Config{
		Service: cfg.Service, Verifier: cfg.Verifier, ResourceMetadataURL: metadataURL, Webhooks: cfg.Webhooks,
	}))
	// The edge, outermost first. Each is a plain func(http.Handler)
	// http.Handler, so another (an Origin check, a rate limit) is one more
	// entry here.
	return chain(mux,
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

// publicHost returns the host of an origin ParsePublicURL accepted.
func publicHost(origin string) string {
	u, _ := url.Parse(origin)
	return u.Hostname()
}

// IsLoopbackHost reports whether host is localhost (any case) or a loopback
// address: the one definition both dev mode's bind check and the SDK's
// DNS-rebinding guard rely on.
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

// ready answers 200 while check passes and 503 while it fails. The cause is
// logged, not shown: probes need the status, and the error may describe the
// database.
func ready(check func(context.Context) error, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// authorizationServers lists the issuer in Protected Resource Metadata only
// when it is an absolute http(s) URL, as RFC 9728 requires: a bare name such
// as the dev issuer "ticketd-dev" names no server a client could contact.
func authorizationServers(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil
	}
	return []string{issuer}
}
