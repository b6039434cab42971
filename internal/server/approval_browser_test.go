package server_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// chromiumPath finds the browser the way internal/console's browser test
// does (TICKETD_CHROMIUM, then the PATH), skipping without one unless
// TICKETD_REQUIRE_BROWSER=1.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if path := os.Getenv("TICKETD_CHROMIUM"); path != "" {
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TICKETD_REQUIRE_BROWSER") == "1" {
		t.Fatal("TICKETD_REQUIRE_BROWSER=1 but Chromium is not installed; run scripts/ensure-chromium.sh")
	}
	t.Skip("the approval browser test needs Chromium (scripts/ensure-chromium.sh installs it)")
	return ""
}

// TestApprovalInTheConsole is the URL path of docs/approval.md end to end: a
// 2025-11-25 agent on stateless HTTP is told approval_required with a
// console URL; the agent's own token signed in to the console gets 403
// there, and an approver of another tenant 404; a person holding
// tickets:approve, signed in in headless Chromium, sees exactly what will
// change and approves; the agent's retry with the same operation ID writes
// once.
func TestApprovalInTheConsole(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{
		Approval: &approval.Options{Policy: approval.Policy{Enabled: true, BulkThreshold: approval.DefaultBulkThreshold}},
	})
	env.SeedProject(t, "acme")
	mint := func(tenant, subject string, scopes ...string) string {
		return env.Mint(t, authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: tenant, Subject: subject,
			Scopes: scopes, TTL: time.Hour}, time.Now())
	}
	agentToken := mint("acme", "alice", authn.ScopeRead, authn.ScopeWrite)
	agent := env.ConnectWith(t, agentToken, nil, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	op := uuid.NewString()
	args := map[string]any{"operation_id": op, "project_id": "support", "title": "Checkout is down", "priority": "urgent"}
	res := servertest.Call(t, agent, mcptools.ToolCreateTicket, args)
	ask := servertest.Decode[mcptools.ErrorOut](t, res)
	if !res.IsError || ask.Error.Code != "approval_required" || !strings.HasPrefix(ask.ApprovalURL, env.URL+"/console/approvals/") {
		t.Fatalf("first call = %+v; want approval_required with a console URL", ask)
	}

	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromiumPath(t)), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 860))
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	open := func(u string) *network.Response {
		t.Helper()
		resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(u))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	signIn := func(tok string) {
		t.Helper()
		// The link form of sign-in: the token rides in the fragment.
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"),
			chromedp.Navigate(env.URL+"/console/signin#token="+url.QueryEscape(tok)),
			chromedp.WaitVisible(chromedp.CSS("#signout"))); err != nil {
			t.Fatalf("sign in: %v", err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(s)
	}

	signIn(agentToken)
	if resp := open(ask.ApprovalURL); resp.Status != 403 || !strings.Contains(text(".problem"), authn.ScopeApprove) {
		t.Fatalf("the agent's token opening the approval URL got %d %q; want 403 naming %s", resp.Status, text(".problem"), authn.ScopeApprove)
	}
	signIn(mint("globex", "mallory", authn.ScopeRead, authn.ScopeApprove))
	if resp := open(ask.ApprovalURL); resp.Status != 404 || !strings.Contains(text(".problem"), "not_found") {
		t.Fatalf("another tenant's approver opening the approval URL got %d %q; want 404", resp.Status, text(".problem"))
	}

	signIn(mint("acme", "carol", authn.ScopeRead, authn.ScopeApprove))
	open(env.URL + "/console/approvals")
	if pending := text("table.list"); !strings.Contains(pending, op) {
		t.Errorf("the console's pending approvals %q do not list the operation", pending)
	}
	if resp := open(ask.ApprovalURL); resp.Status != 200 {
		t.Fatalf("the approver got %d", resp.Status)
	}
	changes := text("#changes")
	for _, want := range []string{"priority", "urgent", "Checkout is down"} {
		if !strings.Contains(changes, want) {
			t.Errorf("the page's changes %q do not show %q", changes, want)
		}
	}
	if summary := text(".summary"); !strings.Contains(summary, op) {
		t.Errorf("the page's summary %q does not name the operation", summary)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := os.Getenv("TICKETD_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "approval.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", shot)
	if env.CountTickets(t, "acme") != 0 {
		t.Fatal("a ticket exists before anyone approved")
	}

	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS("#approve-form button"))); err != nil {
		t.Fatal(err)
	}
	if n := text(".notice"); !strings.HasPrefix(n, "Approved") {
		t.Fatalf("after approving: notice %q", n)
	}
	if env.CountTickets(t, "acme") != 0 {
		t.Fatal("approving wrote the ticket; only the agent's retry may")
	}

	out := servertest.Decode[mcptools.CreateTicketOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args))
	replay := servertest.Decode[mcptools.CreateTicketOut](t, servertest.Call(t, agent, mcptools.ToolCreateTicket, args))
	if out.Replayed || !replay.Replayed || replay.TicketID != out.TicketID || env.CountTickets(t, "acme") != 1 || env.CountOperations(t, "acme") != 1 {
		t.Errorf("the agent's retry = %+v, then %+v; want one write, then a replay (%d tickets)", out, replay, env.CountTickets(t, "acme"))
	}
	open(env.URL + "/console/tickets/" + out.Ticket.Key)
	if got := text(".history .approved"); !strings.Contains(got, "approved by carol via console") {
		t.Errorf("the ticket's history says %q; want who approved and how", got)
	}
	st := servertest.Decode[map[string]any](t, servertest.Call(t, agent, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": op}))
	if a, _ := st["approval"].(map[string]any); a["decided_by"] != "carol" || a["requested_by"] != "alice" || a["decided_via"] != "console" {
		t.Errorf("get_operation_status approval = %v; want asked by alice, decided by carol in the console", st["approval"])
	}
}
