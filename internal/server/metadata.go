package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

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

// metadata is the RFC 9728 Protected Resource Metadata of the MCP resource.
func (w *wiring) metadata() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:             w.public + MCPPath,
		AuthorizationServers: authorizationServers(w.cfg.Issuer, w.cfg.AuthorizationServers),
		// Only what an MCP client may usefully ask for: no tool needs
		// tickets:admin, which is for operators' tokens on /api/v1.
		ScopesSupported:        w.scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "ticketd",
	})
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
