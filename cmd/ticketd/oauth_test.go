package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestOAuthRecipe runs docs/oauth.md against a real identity provider:
// examples/oauth's oidc-provider, installed with npm ci from its lockfile,
// issues tokens with the client_credentials grant and an RFC 8707 resource,
// fetched over HTTP as the guide's curl does, and a `ticketd serve` that
// knows the provider only by its issuer and JWKS URL judges them. Each
// refused token differs from the accepted one in the one claim under test.
func TestOAuthRecipe(t *testing.T) {
	t.Parallel()
	// The audience derives from the public URL, which must be known before
	// ticketd starts: it is the resource the provider issues tokens for, and
	// ticketd's first JWKS fetch needs the provider running.
	// The port is reserved after the install, to keep short the window in
	// which another process could take it.
	dir := installOAuthProvider(t)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	provider := startOAuthProvider(t, dir, resource)

	rawURL := dbtest.SQLiteURL(t)
	seedProject(t, rawURL, "acme")
	env := with(baseEnv(rawURL),
		"TICKETD_ADDR", addr,
		"TICKETD_PUBLIC_URL", "http://"+addr,
		"TICKETD_JWT_ISSUER", provider.issuer,
		"TICKETD_JWT_JWKS_URL", provider.issuer+"/jwks")
	delete(env, "TICKETD_JWT_HS256_SECRET")
	s := startServe(t, env)

	t.Run("ProtectedResourceMetadataNamesTheProvider", func(t *testing.T) {
		var prm struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
		}
		getJSON(t, s.URL+"/.well-known/oauth-protected-resource/mcp", "", &prm)
		if prm.Resource != resource || !slices.Equal(prm.AuthorizationServers, []string{provider.issuer}) {
			t.Fatalf("metadata = %+v, want resource %s and authorization_servers [%s]", prm, resource, provider.issuer)
		}
	})

	t.Run("ItsTokenIsAccepted", func(t *testing.T) {
		tok := provider.token(t, "support-agent:support-agent-secret", resource, "tickets:read tickets:write")
		var projects struct {
			Projects []struct{ ID string } `json:"projects"`
		}
		getJSON(t, s.URL+"/api/v1/projects", tok, &projects)
		if len(projects.Projects) != 1 || projects.Projects[0].ID != "support" {
			t.Fatalf("GET /api/v1/projects = %+v, want acme's project support", projects)
		}
		session := connect(t, s.URL+"/mcp", tok)
		_, out, err := createTicket(context.Background(), session, "Sign-in page times out")
		if err != nil {
			t.Fatalf("create_ticket: %v", err)
		}
		// The reporter is the token's sub, the client's ID for this grant.
		if out.Status != "succeeded" || out.Ticket.Key != "SUP-1" || out.Ticket.Reporter != "support-agent" {
			t.Fatalf("create_ticket = %+v, want succeeded SUP-1 reported by support-agent", out)
		}
	})

	for _, tc := range []struct {
		name, client, resource, scope, reason string
	}{
		// Same client, issuer and key; only aud names another API.
		{"WrongAudienceIsRefused", "support-agent:support-agent-secret", "https://reports.example/api", "reports:read", "aud claim does not name this resource"},
		// Right audience; the client maps to no tenant.
		{"MissingTenantIsRefused", "unmapped:unmapped-secret", resource, "tickets:read tickets:write", "tenant claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := provider.token(t, tc.client, tc.resource, tc.scope)
			for _, req := range []*http.Request{
				newRequest(t, http.MethodGet, s.URL+"/api/v1/projects", ""),
				newRequest(t, http.MethodPost, s.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`),
			} {
				req.Header.Set("Authorization", "Bearer "+tok)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body := readAll(t, res)
				challenge := res.Header.Get("WWW-Authenticate")
				if res.StatusCode != http.StatusUnauthorized || !strings.Contains(challenge, `error="invalid_token"`) || !strings.Contains(body, tc.reason) {
					t.Errorf("%s %s: %s, WWW-Authenticate %q, body %q; want 401 invalid_token saying %q",
						req.Method, req.URL.Path, res.Status, challenge, body, tc.reason)
				}
			}
		})
	}
}

// oauthProvider is examples/oauth/provider.mjs running from a temporary
// copy with its locked packages installed.
type oauthProvider struct {
	issuer string
}

// installOAuthProvider copies examples/oauth to a temporary directory and
// installs its locked packages there with npm ci. Without Node.js the test
// is skipped; with Node.js but no npm registry (or cache) it fails, as the
// recipe could not be run as written.
func installOAuthProvider(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the OAuth recipe needs Node.js 20 or later with npm: %s is not on PATH", tool)
		}
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json", "provider.mjs"} {
		if err := os.WriteFile(filepath.Join(dir, name), readRepoFile(t, "examples/oauth/"+name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --prefer-offline takes npm's cache as it is, so with a warm cache the
	// install copies a few megabytes and asks the registry nothing.
	npm := exec.CommandContext(ctx, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = dir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in a copy of examples/oauth: %v\n%s", err, out)
	}
	return dir
}

// startOAuthProvider runs the installed provider in dir as docs/oauth.md
// does, issuing tokens for resource, on a port it picks, and waits for its
// issuer line. It is killed at cleanup.
func startOAuthProvider(t *testing.T, dir, resource string) *oauthProvider {
	t.Helper()
	cmd := exec.Command("node", "provider.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PORT=0", "TICKETD_RESOURCE="+resource)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("node provider.mjs: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	issuer := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "issuer "); ok {
				issuer <- u
				break
			}
		}
		close(issuer)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case u, ok := <-issuer:
		if !ok {
			t.Fatalf("provider exited without an issuer line; stderr:\n%s", stderr.String())
		}
		return &oauthProvider{issuer: u}
	case <-time.After(20 * time.Second):
		t.Fatalf("provider printed no issuer line within 20s; stderr:\n%s", stderr.String())
		return nil
	}
}

// token asks the provider for an access token as docs/oauth.md's curl does:
// client_credentials, the client authenticated with HTTP Basic, an RFC 8707
// resource and a scope.
func (p *oauthProvider) token(t *testing.T, client, resource, scope string) string {
	t.Helper()
	id, secret, _ := strings.Cut(client, ":")
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {resource}, "scope": {scope}}
	req := newRequest(t, http.MethodPost, p.issuer+"/token", form.Encode())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(id, secret)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil || out.AccessToken == "" || out.TokenType != "Bearer" {
		t.Fatalf("token for %s at %s: %s %s", id, resource, res.Status, body)
	}
	return out.AccessToken
}

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago, for a server whose URL must be configured before it starts.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// newRequest builds a request with body and the Accept header the MCP
// endpoint wants, which REST ignores.
func newRequest(t *testing.T, method, target, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func readAll(t *testing.T, res *http.Response) string {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// getJSON GETs target (with a bearer token unless it is empty), requires 200
// and decodes the body into out.
func getJSON(t *testing.T, target, token string, out any) {
	t.Helper()
	req := newRequest(t, http.MethodGet, target, "")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, res)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", target, res.Status, body)
	}
	if err := json.Unmarshal([]byte(body), out); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
}
