package server_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// browser is a cookie-keeping client of one Env's console that does not
// follow redirects.
type browser struct {
	t      *testing.T
	env    *servertest.Env
	client *http.Client
}

func newBrowser(t *testing.T, env *servertest.Env) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, env: env, client: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.env.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp, string(out)
}

func (b *browser) signIn(token string) {
	b.t.Helper()
	if resp, body := b.do(http.MethodPost, "/console/signin", url.Values{"token": {token}}); resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("sign in = %d:\n%s", resp.StatusCode, body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the session's CSRF token off the console's new-ticket form
// (every form of a session carries the same one).
func (b *browser) csrf() string {
	b.t.Helper()
	_, body := b.do(http.MethodGet, "/console/tickets/new", nil)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		b.t.Fatalf("no CSRF token on the new-ticket form:\n%s", body)
	}
	return m[1]
}

// approvalFixture serves approval on under opts, with the project support
// in tenant acme.
func approvalFixture(t *testing.T, opts approval.Options) *servertest.Env {
	t.Helper()
	opts.Policy = approval.Policy{Enabled: true, BulkThreshold: approval.DefaultBulkThreshold}
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Approval: &opts})
	env.SeedProject(t, "acme")
	return env
}

// askUrgent has token's agent, on 2025-11-25 stateless HTTP, ask for an
// urgent ticket; it returns the agent's session, the arguments and the
// console page of the approval it was told of.
func askUrgent(t *testing.T, env *servertest.Env, token string) (*mcp.ClientSession, map[string]any, string) {
	t.Helper()
	agent := env.ConnectWith(t, token, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	args := map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "Checkout is down", "priority": "urgent"}
	res := servertest.Call(t, agent, mcptools.ToolCreateTicket, args)
	ask := servertest.Decode[mcptools.ErrorOut](t, res)
	if !res.IsError || ask.Error.Code != "approval_required" || ask.ApprovalID == "" {
		t.Fatalf("first call = %+v; want approval_required", ask)
	}
	return agent, args, "/console/approvals/" + ask.ApprovalID
}

func personToken(env *servertest.Env, t *testing.T, tenant, subject string, scopes ...string) string {
	t.Helper()
	return env.Mint(t, authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: tenant, Subject: subject,
		Scopes: scopes, TTL: time.Hour}, time.Now())
}

// TestAgentTokenCannotApproveInTheConsole: the agent's token (tickets:read
// tickets:write), signed in to the console over real HTTP, is refused the
// approval page and the decision with 403; a person holding tickets:approve
// alone decides; the agent's retries then write one ticket.
func TestAgentTokenCannotApproveInTheConsole(t *testing.T) {
	t.Parallel()
	env := approvalFixture(t, approval.Options{})
	agentToken := personToken(env, t, "acme", "agent", authn.ScopeRead, authn.ScopeWrite)
	agent, args, page := askUrgent(t, env, agentToken)

	asAgent := newBrowser(t, env)
	asAgent.signIn(agentToken)
	if resp, body := asAgent.do(http.MethodGet, page, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, authn.ScopeApprove) {
		t.Fatalf("the agent's token opening the approval = %d; want 403 naming %s:\n%s", resp.StatusCode, authn.ScopeApprove, body)
	}
	if resp, _ := asAgent.do(http.MethodPost, page+"/approve", url.Values{"csrf": {asAgent.csrf()}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the agent's token approving = %d, want 403", resp.StatusCode)
	}
	other := newBrowser(t, env)
	other.signIn(personToken(env, t, "globex", "mallory", authn.ScopeRead, authn.ScopeApprove))
	if resp, _ := other.do(http.MethodGet, page, nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's approver opening the approval = %d, want 404", resp.StatusCode)
	}
	if n := env.CountTickets(t, "acme"); n != 0 {
		t.Fatalf("%d tickets before a person approved", n)
	}

	person := newBrowser(t, env)
	person.signIn(personToken(env, t, "acme", "carol", authn.ScopeApprove))
	resp, body := person.do(http.MethodGet, page, nil)
	m := csrfField.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusOK || m == nil || !strings.Contains(body, `id="approve-form"`) {
		t.Fatalf("carol opening the approval = %d; want the page with the approve form:\n%s", resp.StatusCode, body)
	}
	if resp, _ := person.do(http.MethodPost, page+"/approve", url.Values{"csrf": {m[1]}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("carol approving = %d, want 303", resp.StatusCode)
	}
	first := servertest.Decode[mcptools.CreateTicketOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args))
	replay := servertest.Decode[mcptools.CreateTicketOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args))
	if first.Replayed || !replay.Replayed || env.CountTickets(t, "acme") != 1 || env.CountOperations(t, "acme") != 1 {
		t.Errorf("the agent's retries = %+v, %+v; want one write, then a replay (%d tickets)", first, replay, env.CountTickets(t, "acme"))
	}
}

// TestFourEyesInTheConsole: with four-eyes on, the requester, although it
// holds tickets:approve, sees the page without the forms and is refused a
// decision posted anyway (403); a second person approves.
func TestFourEyesInTheConsole(t *testing.T) {
	t.Parallel()
	env := approvalFixture(t, approval.Options{FourEyes: true})
	aliceToken := personToken(env, t, "acme", "alice", authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove)
	agent, args, page := askUrgent(t, env, aliceToken)

	alice := newBrowser(t, env)
	alice.signIn(aliceToken)
	if resp, body := alice.do(http.MethodGet, page, nil); resp.StatusCode != http.StatusOK || strings.Contains(body, `id="approve-form"`) ||
		!strings.Contains(body, "four-eyes") {
		t.Fatalf("the requester's own approval page = %d; want it shown without the forms, saying four-eyes:\n%s", resp.StatusCode, body)
	}
	if resp, body := alice.do(http.MethodPost, page+"/approve", url.Values{"csrf": {alice.csrf()}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("the requester approving under four-eyes = %d, want 403:\n%s", resp.StatusCode, body)
	}
	bob := newBrowser(t, env)
	bob.signIn(personToken(env, t, "acme", "bob", authn.ScopeApprove))
	_, body := bob.do(http.MethodGet, page, nil)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("bob's approval page has no form:\n%s", body)
	}
	if resp, _ := bob.do(http.MethodPost, page+"/approve", url.Values{"csrf": {m[1]}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bob approving = %d, want 303", resp.StatusCode)
	}
	if out := servertest.Decode[mcptools.CreateTicketOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args)); out.Replayed || env.CountTickets(t, "acme") != 1 {
		t.Errorf("the retry after bob approved = %+v (%d tickets); want one write", out, env.CountTickets(t, "acme"))
	}
}

// TestExpiredApprovalOnTheConsolePage: past TICKETD_APPROVAL_TTL the
// approval page shows the approval expired and refuses a decision (409).
func TestExpiredApprovalOnTheConsolePage(t *testing.T) {
	t.Parallel()
	start := time.Now()
	var clock atomic.Int64
	clock.Store(start.UnixNano())
	env := approvalFixture(t, approval.Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	agent, args, page := askUrgent(t, env, personToken(env, t, "acme", "agent", authn.ScopeRead, authn.ScopeWrite))
	carol := newBrowser(t, env)
	carol.signIn(personToken(env, t, "acme", "carol", authn.ScopeApprove))
	_, body := carol.do(http.MethodGet, page, nil)
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the approval page has no form before expiry:\n%s", body)
	}
	clock.Store(start.Add(approval.DefaultTTL + time.Second).UnixNano())
	if resp, body := carol.do(http.MethodGet, page, nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, "approval-expired") ||
		strings.Contains(body, `id="approve-form"`) {
		t.Fatalf("the approval page past its TTL = %d; want it shown expired, without the forms:\n%s", resp.StatusCode, body)
	}
	if resp, _ := carol.do(http.MethodPost, page+"/approve", url.Values{"csrf": {m[1]}}); resp.StatusCode != http.StatusConflict {
		t.Fatalf("approving past the TTL = %d, want 409", resp.StatusCode)
	}
	toolError := servertest.Decode[mcptools.ErrorOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args))
	if toolError.Error.Code != "approval_required" || "/console/approvals/"+toolError.ApprovalID == page || env.CountTickets(t, "acme") != 0 {
		t.Errorf("the agent's retry past the TTL = %+v (%d tickets); want a new approval asked, nothing written", toolError, env.CountTickets(t, "acme"))
	}
}

// TestConsoleCookieSecureExactlyWhenPublicURLIsHTTPS: the session cookie is
// __Host- prefixed and Secure when TICKETD_PUBLIC_URL is https (a proxy in
// front terminates TLS), and plain otherwise.
func TestConsoleCookieSecureExactlyWhenPublicURLIsHTTPS(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		public, name string
		secure       bool
	}{
		{"https://tickets.example", "__Host-ticketd_console", true},
		{"", "ticketd_console", false},
	} {
		env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{PublicURL: tc.public, Edge: server.Edge{AllowedHosts: []string{"127.0.0.1"}}})
		b := newBrowser(t, env)
		resp, _ := b.do(http.MethodPost, "/console/signin", url.Values{"token": {env.Token(t, "acme", authn.ScopeRead)}})
		cookies := resp.Cookies()
		if len(cookies) != 1 || cookies[0].Name != tc.name || cookies[0].Secure != tc.secure {
			t.Errorf("public URL %q: cookies %+v; want one %s with Secure=%v", tc.public, cookies, tc.name, tc.secure)
		}
	}
}
