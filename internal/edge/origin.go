package edge

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/errcode"
)

// Reject writes a refusal in the guarded route's own error format; code is
// a contract error code (docs/contract.md#error-codes). WriteError is the default.
type Reject func(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, message string)

// WriteError is the default Reject: a JSON body
// {"error":{"code","message","retryable":false}}, the shape MCP tool errors
// carry, which a REST wiring replaces with its problem+json writer.
func WriteError(w http.ResponseWriter, _ *http.Request, status int, code errcode.Code, message string) {
	type body struct {
		Code      errcode.Code `json:"code"`
		Message   string       `json:"message"`
		Retryable bool         `json:"retryable"`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]body{"error": {Code: code, Message: message}}) // nothing left to tell of a failed write
}

// OriginOptions configures Origin.
type OriginOptions struct {
	// PublicURL is the origin clients reach the server at, such as
	// https://tickets.example.com. Its origin is always allowed as Origin
	// and its host as Host. Required.
	PublicURL string
	// AllowedOrigins are further origins (scheme://host[:port]) a browser
	// page may call from (TICKETD_ALLOWED_ORIGINS).
	AllowedOrigins []string
	// AllowedHosts are further host names the server answers to
	// (TICKETD_ALLOWED_HOSTS), such as an internal name behind a proxy; a
	// port, if given, is ignored.
	AllowedHosts []string
	// Reject writes the 403; WriteError if nil.
	Reject Reject
}

// Origin refuses with 403, before anything else runs, a request whose
// Origin header is not an allowed origin or whose Host is not an allowed
// host. A request without Origin passes the Origin check (agents and
// operators' tools send none; browsers always do on a cross-origin POST).
// The Host check is what stops DNS rebinding, where the page's origin and
// the Host both carry the attacker's name; it applies in every mode, unlike
// the SDK's loopback-only guard. Host names compare without port and case;
// when the public URL is loopback, localhost, 127.0.0.1 and ::1 are allowed
// too. Mount it on /mcp and /api/v1, not on probes, which a platform calls
// by address.
func Origin(opts OriginOptions) (func(http.Handler) http.Handler, error) {
	public, err := url.Parse(opts.PublicURL)
	if err != nil || public.Scheme == "" || public.Host == "" {
		return nil, fmt.Errorf("edge: public URL %q is not an absolute URL", opts.PublicURL)
	}
	origins := []string{normalOrigin(public)}
	for _, o := range opts.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || strings.TrimSuffix(u.Path, "/") != "" {
			return nil, fmt.Errorf("edge: allowed origin %q is not of the form scheme://host[:port]", o)
		}
		origins = append(origins, normalOrigin(u))
	}
	hosts := []string{strings.ToLower(public.Hostname())}
	for _, h := range opts.AllowedHosts {
		if h = hostOnly(h); h == "" {
			return nil, errors.New("edge: an allowed host is empty")
		}
		hosts = append(hosts, h)
	}
	if isLoopback(public.Hostname()) {
		hosts = append(hosts, "localhost", "127.0.0.1", "::1")
	}
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !slices.Contains(hosts, hostOnly(r.Host)) {
				reject(w, r, http.StatusForbidden, errcode.Forbidden, "the Host header does not name this server")
				return
			}
			if values := r.Header.Values("Origin"); len(values) > 0 {
				if len(values) > 1 || !originAllowed(origins, values[0]) {
					reject(w, r, http.StatusForbidden, errcode.Forbidden, "requests from this Origin are not allowed")
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// originAllowed compares an Origin header with the allowed list. "null"
// (sandboxed frames, file: pages) never matches.
func originAllowed(allowed []string, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return false
	}
	return slices.Contains(allowed, normalOrigin(u))
}

// normalOrigin lower-cases scheme and host and drops a default port, so
// https://Tickets.Example.com:443 and https://tickets.example.com match.
func normalOrigin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	host := strings.ToLower(u.Hostname())
	port := u.Port()
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		port = ""
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(host, port)
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host
}

// hostOnly returns the lower-cased host name of a Host header value or a
// host[:port] entry, without port or IPv6 brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		hostport = h
	}
	return strings.ToLower(strings.Trim(hostport, "[]"))
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SingleAuthorization refuses a request carrying more than one
// Authorization header with 400 (RFC 6750 invalid_request): servers and
// proxies disagree on which one counts, and the SDK would use the first.
func SingleAuthorization(reject Reject) func(http.Handler) http.Handler {
	if reject == nil {
		reject = WriteError
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(r.Header.Values("Authorization")) > 1 {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_request", error_description="more than one Authorization header"`)
				reject(w, r, http.StatusBadRequest, errcode.Unauthenticated, "send exactly one Authorization header")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
