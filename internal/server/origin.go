package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
)

// Reject writes a refusal in the guarded route's own error format; code is
// a contract error code (docs/contract.md#error-codes). WriteError is the default.
type Reject func(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, message string)

// WriteError is the default Reject: a JSON body
// {"error":{"code","message","retryable"}}, the shape MCP tool errors
// carry, which a REST wiring replaces with its problem+json writer.
// retryable is the error table's word for code (errcode), so it agrees
// with any Retry-After sent beside it.
func WriteError(w http.ResponseWriter, _ *http.Request, status int, code errcode.Code, message string) {
	type body struct {
		Code      errcode.Code `json:"code"`
		Message   string       `json:"message"`
		Retryable bool         `json:"retryable"`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]body{"error": {Code: code, Message: message, Retryable: code.Retryable()}}) // nothing left to tell of a failed write
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
	// AnyAddress also admits a Host that is an IP address literal, for
	// routes a scraper reaches by the replica's address (/metrics): DNS
	// rebinding needs a name the attacker controls, so an address literal
	// cannot be one.
	AnyAddress bool
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
	public, hostOK, reject, err := hostCheck(opts)
	if err != nil {
		return nil, err
	}
	origins := []string{normalOrigin(public)}
	for _, o := range opts.AllowedOrigins {
		u, err := url.Parse(o)
		if err != nil || u.Scheme == "" || u.Host == "" || strings.TrimSuffix(u.Path, "/") != "" {
			return nil, fmt.Errorf("edge: allowed origin %q is not of the form scheme://host[:port]", o)
		}
		origins = append(origins, normalOrigin(u))
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostOK(r.Host) {
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

// Host is Origin's Host check alone (403 for a Host that does not name this
// server), for the routes that keep their own cross-origin rules: the
// console, which checks Origin and CSRF itself, and /metrics (with
// AnyAddress). Without it, a page on a rebinding name could read a local
// server's console or metrics. AllowedOrigins is ignored.
func Host(opts OriginOptions) (func(http.Handler) http.Handler, error) {
	_, hostOK, reject, err := hostCheck(opts)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !hostOK(r.Host) {
				reject(w, r, http.StatusForbidden, errcode.Forbidden, "the Host header does not name this server")
				return
			}
			next.ServeHTTP(w, r)
		})
	}, nil
}

// hostCheck parses opts into the public URL, the Host test and the Reject
// both Origin and Host use.
func hostCheck(opts OriginOptions) (*url.URL, func(host string) bool, Reject, error) {
	public, err := url.Parse(opts.PublicURL)
	if err != nil || public.Scheme == "" || public.Host == "" {
		return nil, nil, nil, fmt.Errorf("edge: public URL %q is not an absolute URL", opts.PublicURL)
	}
	hosts := []string{strings.ToLower(public.Hostname())}
	for _, h := range opts.AllowedHosts {
		if h = hostOnly(h); h == "" {
			return nil, nil, nil, errors.New("edge: an allowed host is empty")
		}
		hosts = append(hosts, h)
	}
	if IsLoopbackHost(public.Hostname()) {
		hosts = append(hosts, "localhost", "127.0.0.1", "::1")
	}
	reject := opts.Reject
	if reject == nil {
		reject = WriteError
	}
	return public, func(host string) bool {
		h := hostOnly(host)
		return slices.Contains(hosts, h) || (opts.AnyAddress && net.ParseIP(h) != nil)
	}, reject, nil
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

// IsLoopbackHost reports whether host is localhost (any case) or a loopback
// address: Origin's Host check allows all three loopback names when the
// public URL is one, and dev mode's bind check uses it
// (cmd/ticketd/config.go). The SDK's own DNS-rebinding guard is off
// (DisableLocalhostProtection, in New) because Origin checks Host instead.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// SingleAuthorization checks the Authorization header before any token is
// parsed, the same way on every route it guards:
//
//   - more than one Authorization header: 400 (RFC 6750 invalid_request):
//     servers and proxies disagree on which one counts, and the SDK would
//     use the first;
//   - one over authn.MaxAuthorization (16 KiB): 400 invalid_request, so a
//     huge bad token costs no JWT parsing;
//   - one that is not exactly "Bearer <b64token>" (authn.BearerToken; a tab
//     after the scheme, say): removed, so the route answers as it does for
//     a request without a token (401 with its challenge). The SDK's own
//     parser splits on any whitespace and REST's did not, so the same header
//     was a token on /mcp and none on /api/v1.
func SingleAuthorization(reject Reject) func(http.Handler) http.Handler {
	if reject == nil {
		reject = WriteError
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			values := r.Header.Values("Authorization")
			switch {
			case len(values) > 1:
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_request", error_description="more than one Authorization header"`)
				reject(w, r, http.StatusBadRequest, errcode.Unauthenticated, "send exactly one Authorization header")
				return
			case len(values) == 1 && len(values[0]) > authn.MaxAuthorization:
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_request", error_description="Authorization header too large"`)
				reject(w, r, http.StatusBadRequest, errcode.Unauthenticated, fmt.Sprintf("the Authorization header is larger than %d KiB; no token is that long", authn.MaxAuthorization>>10))
				return
			case len(values) == 1:
				if _, ok := authn.BearerToken(values[0]); !ok {
					r.Header.Del("Authorization")
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}
