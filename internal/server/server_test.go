package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// listToolsBody is a complete tools/list request in protocol 2026-07-28.
const listToolsBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
	`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`

// postMCP sends body to /mcp as a raw MCP client would, with token (none if
// empty), and returns the response with its body read.
func postMCP(t *testing.T, baseURL, host, token, body string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, baseURL+server.MCPPath, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func TestMCPNeedsAValidToken(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	now := time.Now()
	valid := authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: "acme", Subject: "agent",
		Scopes: []string{authn.ScopeRead}, TTL: time.Hour}
	changed := func(f func(*authn.TokenRequest)) authn.TokenRequest {
		r := valid
		f(&r)
		return r
	}
	cases := []struct {
		name  string
		token string
	}{
		{"NoToken", ""},
		{"Garbage", "not-a-jwt"},
		{"Expired", env.Mint(t, changed(func(r *authn.TokenRequest) { r.TTL = time.Minute }), now.Add(-time.Hour))},
		{"WrongAudience", env.Mint(t, changed(func(r *authn.TokenRequest) { r.Audience = "http://elsewhere.example/mcp" }), now)},
		{"WrongIssuer", env.Mint(t, changed(func(r *authn.TokenRequest) { r.Issuer = "https://evil.example" }), now)},
	}
	wantChallenge := `resource_metadata="` + env.URL + server.MCPResourceMetadataPath + `"`
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			resp, body := postMCP(t, env.URL, "", c.token, listToolsBody)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status = %d, want 401 (%s)", resp.StatusCode, body)
			}
			got := resp.Header.Get("WWW-Authenticate")
			if !strings.HasPrefix(got, "Bearer ") || !strings.Contains(got, wantChallenge) {
				t.Errorf("WWW-Authenticate = %q, want Bearer with %s", got, wantChallenge)
			}
			// A presented token that was rejected says so (RFC 6750 §3.1);
			// no token gets no error code.
			if invalid := strings.Contains(got, `error="invalid_token"`); invalid != (c.token != "") {
				t.Errorf("WWW-Authenticate = %q; error=\"invalid_token\" present %v, want %v", got, invalid, c.token != "")
			}
			if c.token != "" {
				cs, err := servertest.Dial(env.Endpoint, c.token)
				if err == nil {
					_ = cs.Close()
					t.Errorf("the MCP client connected with a bad token")
				}
			}
		})
	}

	t.Run("ValidToken", func(t *testing.T) {
		t.Parallel()
		resp, body := postMCP(t, env.URL, "", env.Mint(t, valid, now), listToolsBody)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, "create_ticket") {
			t.Errorf("status %d, body %s; want 200 with the tools", resp.StatusCode, body)
		}
	})
}

// TestMCPAnswersPlainJSON: a client accepting both JSON and SSE, as the
// TypeScript and Go SDKs do, gets the answer as one JSON-RPC message in a
// JSON body, which costs less than an SSE stream.
func TestMCPAnswersPlainJSON(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	resp, body := postMCP(t, env.URL, "", env.Token(t, "acme", authn.ScopeRead), listToolsBody)
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("status %d, Content-Type %q; want 200 application/json", resp.StatusCode, ct)
	}
	var msg struct {
		ID     int `json:"id"`
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || msg.ID != 1 || len(msg.Result.Tools) == 0 {
		t.Errorf("body is not one tools/list answer (%v): %s", err, body)
	}
}

func TestProtectedResourceMetadata(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	for _, path := range []string{server.MCPResourceMetadataPath, server.ResourceMetadataPath} {
		resp, body := get(t, env.URL+path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		var prm struct {
			Resource               string   `json:"resource"`
			AuthorizationServers   []string `json:"authorization_servers"`
			ScopesSupported        []string `json:"scopes_supported"`
			BearerMethodsSupported []string `json:"bearer_methods_supported"`
		}
		if err := json.Unmarshal([]byte(body), &prm); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
		if prm.Resource != env.Endpoint || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != servertest.Issuer ||
			strings.Join(prm.ScopesSupported, " ") != "tickets:read tickets:write" ||
			strings.Join(prm.BearerMethodsSupported, " ") != "header" {
			t.Errorf("GET %s = %+v", path, prm)
		}
	}
}

// TestMetadataNamesConfiguredAuthorizationServers: with
// TICKETD_OAUTH_AUTHORIZATION_SERVERS, PRM names those servers, so a client
// that discovers OAuth finds the issuer of the tokens ticketd verifies.
func TestMetadataNamesConfiguredAuthorizationServers(t *testing.T) {
	t.Parallel()
	servers := []string{"https://login.example.com/realms/acme", "https://idp.example.org"}
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{AuthorizationServers: servers})
	_, body := get(t, env.URL+server.MCPResourceMetadataPath)
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal([]byte(body), &prm); err != nil || strings.Join(prm.AuthorizationServers, " ") != strings.Join(servers, " ") {
		t.Errorf("authorization_servers = %v (%v), want %v", prm.AuthorizationServers, err, servers)
	}
	if _, err := server.ParseAuthorizationServers("https://ok.example, ticketd-dev"); err == nil {
		t.Error("a bare name was accepted as an authorization server")
	}
	if got, err := server.ParseAuthorizationServers(" https://a.example ,https://b.example,"); err != nil || len(got) != 2 {
		t.Errorf("parse = %v, %v; want two servers", got, err)
	}
}

// TestNoScopeRefusalNamesTheRequestID: the 403 for a token without any
// ticketd scope answers in a JSON-RPC error that names the request's id.
func TestNoScopeRefusalNamesTheRequestID(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	resp, body := postMCP(t, env.URL, "", env.Token(t, "acme", "profile"), listToolsBody)
	var msg struct {
		ID    json.RawMessage     `json:"id"`
		Error *struct{ Code int } `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &msg); err != nil || resp.StatusCode != http.StatusForbidden || msg.Error == nil || string(msg.ID) != "1" {
		t.Errorf("no-scope token: %d %s, want 403 with a JSON-RPC error for id 1", resp.StatusCode, body)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	check := func(path string, wantStatus int, wantBody string) {
		t.Helper()
		resp, body := get(t, env.URL+path)
		if resp.StatusCode != wantStatus || resp.Header.Get("Content-Type") != "application/json" ||
			strings.TrimSpace(body) != wantBody {
			t.Errorf("GET %s = %d %s %q, want %d application/json %s", path, resp.StatusCode,
				resp.Header.Get("Content-Type"), body, wantStatus, wantBody)
		}
	}
	check(server.HealthPath, http.StatusOK, `{"status":"ok"}`)
	check(server.ReadyPath, http.StatusOK, `{"status":"ready"}`)

	if err := env.DB.Close(); err != nil {
		t.Fatal(err)
	}
	check(server.ReadyPath, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
	check(server.HealthPath, http.StatusOK, `{"status":"ok"}`)
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	idOf := func(sent string) string {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, env.URL+server.HealthPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sent != "" {
			req.Header.Set(server.RequestIDHeader, sent)
		}
		resp, _ := do(t, req)
		return resp.Header.Get(server.RequestIDHeader)
	}
	if got := idOf("trace-123.abc"); got != "trace-123.abc" {
		t.Errorf("a sane request ID was replaced by %q", got)
	}
	for _, bad := range []string{"", "has spaces and \"quotes\"", strings.Repeat("x", 200)} {
		got := idOf(bad)
		if got == "" || got == bad {
			t.Errorf("request ID %q came back as %q, want a fresh one", bad, got)
		}
	}
}

func TestOversizedBodiesAreRefused(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	huge := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", tickets.MaxInputBytes) + `"}}`
	resp, body := postMCP(t, env.URL, "", env.Token(t, "acme", authn.ScopeRead), huge)
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413 (%s)", resp.StatusCode, body)
	}
}

// TestAPIIsMounted: the edge mounts the REST API itself, at its full path.
func TestAPIIsMounted(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	if resp, body := get(t, env.URL+"/api/v1/openapi.json"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"openapi"`) {
		t.Errorf("GET /api/v1/openapi.json = %d %.80q, want the REST API's document", resp.StatusCode, body)
	}
	if resp, _ := get(t, env.URL+"/api/v1/tickets"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/tickets without a token = %d, want 401", resp.StatusCode)
	}
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	v := verifier(t, "http://127.0.0.1:8080/mcp")
	good := server.Config{Service: svc, Verifier: v, PublicURL: "http://127.0.0.1:8080", Issuer: servertest.Issuer, ConsoleSessions: console.NewSessions(d.Gorm)}
	if _, err := server.New(good); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for name, mutate := range map[string]func(*server.Config){
		"NoService":     func(c *server.Config) { c.Service = nil },
		"NoVerifier":    func(c *server.Config) { c.Verifier = nil },
		"NoIssuer":      func(c *server.Config) { c.Issuer = "" },
		"NoPublicURL":   func(c *server.Config) { c.PublicURL = "" },
		"NotHTTP":       func(c *server.Config) { c.PublicURL = "ftp://example.com" },
		"WithPath":      func(c *server.Config) { c.PublicURL = "https://example.com/ticketd" },
		"WithQuery":     func(c *server.Config) { c.PublicURL = "https://example.com?x=1" },
		"WithUserinfo":  func(c *server.Config) { c.PublicURL = "https://u:p@example.com" },
		"RelativeThing": func(c *server.Config) { c.PublicURL = "example.com" },
	} {
		c := good
		mutate(&c)
		if _, err := server.New(c); err == nil {
			t.Errorf("%s: config accepted", name)
		}
	}
}

// TestLocalhostProtectionFollowsThePublicURL documents the DNS-rebinding
// guard choice: on for a loopback public URL (dev), off for a public name
// (behind a proxy that may connect over loopback).
func TestLocalhostProtectionFollowsThePublicURL(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	sessions := console.NewSessions(d.Gorm)
	for _, c := range []struct {
		publicURL, host string
		want            int
	}{
		{"https://tickets.example.com", "tickets.example.com", http.StatusOK},
		{"http://localhost:8080", "evil.example", http.StatusForbidden},
	} {
		v := verifier(t, c.publicURL+server.MCPPath)
		h, err := server.New(server.Config{Service: svc, Verifier: v, PublicURL: c.publicURL, Issuer: servertest.Issuer, ConsoleSessions: sessions})
		if err != nil {
			t.Fatal(err)
		}
		ts := httptest.NewServer(h)
		t.Cleanup(ts.Close)
		token, err := authn.MintHS256(secret, authn.TokenRequest{Issuer: servertest.Issuer, Audience: c.publicURL + server.MCPPath,
			Tenant: "acme", Subject: "agent", Scopes: []string{authn.ScopeRead}, TTL: time.Hour}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if resp, body := postMCP(t, ts.URL, c.host, token, listToolsBody); resp.StatusCode != c.want {
			t.Errorf("public URL %s, Host %s: status %d, want %d (%s)", c.publicURL, c.host, resp.StatusCode, c.want, body)
		}
	}
}

var secret = []byte("server-test-secret-of-32-bytes-or-more")

func verifier(t *testing.T, audience string) *authn.Verifier {
	t.Helper()
	v, err := authn.NewVerifier(context.Background(), authn.Config{Issuer: servertest.Issuer, Audience: audience, HS256Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestReadinessHonoursItsTimeout: a check that never returns makes /readyz
// answer 503 instead of hanging the prober.
func TestReadinessHonoursItsTimeout(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Ready: func(ctx context.Context) error {
		<-ctx.Done()
		return errors.Join(errors.New("database hung"), ctx.Err())
	}})
	start := time.Now()
	resp, _ := get(t, env.URL+server.ReadyPath)
	if resp.StatusCode != http.StatusServiceUnavailable || time.Since(start) > 10*time.Second {
		t.Errorf("hung readiness check: %d after %s, want 503 within the timeout", resp.StatusCode, time.Since(start))
	}
}

func TestMetadataNamesOnlyAnIssuerURL(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	sessions := console.NewSessions(d.Gorm)
	for issuer, want := range map[string]int{"https://login.example.com": 1, "ticketd-dev": 0} {
		h, err := server.New(server.Config{Service: svc, Verifier: verifier(t, "http://127.0.0.1:8080/mcp"),
			PublicURL: "http://127.0.0.1:8080", Issuer: issuer, ConsoleSessions: sessions})
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, server.MCPResourceMetadataPath, nil))
		var prm struct {
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &prm); err != nil || len(prm.AuthorizationServers) != want {
			t.Errorf("issuer %q: authorization_servers = %v (%v), want %d entries", issuer, prm.AuthorizationServers, err, want)
		}
	}
}
