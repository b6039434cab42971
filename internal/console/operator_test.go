package console_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestBrowserOperatorResolvesUnknownOperation walks an operator, in
// headless Chromium, from the list of unknown operations to one whose
// GitHub answer was lost, and records that it happened, naming the issue.
// The finding is in the operation's history with the operator's name, and
// the agent's retry of that operation_id afterwards answers it.
func TestBrowserOperatorResolvesUnknownOperation(t *testing.T) {
	t.Parallel()
	gh := githubtest.New("ghp_console")
	apiURL := githubtest.Start(t, gh)
	d := dbtest.SQLite(t)
	tracked := githubtest.Tracked("ghp_console", time.Second)
	tracked.Settle = time.Hour // nothing settles by itself during the test: the operator does
	svc := tickets.NewService(d.Gorm, tickets.Options{Tracked: tracked})
	e := serveConsole(t, svc, d.Gorm, console.Config{})
	ctx := context.Background()
	if _, err := e.svc.CreateProject(ctx, tenant, tickets.Project{ID: "widgets", Key: "WID", Name: "Widgets",
		Backend: &tracker.Backend{Kind: tracker.KindGitHub, Repository: "acme/widgets", APIURL: apiURL, Credential: githubtest.Credential}}); err != nil {
		t.Fatal(err)
	}
	gh.FailCreates(githubtest.DropAfterCreate)
	gh.LagLists(time.Hour)
	id := uuid.NewString()
	in := tickets.NewTicket{ProjectID: "widgets", Title: "Widget jams on start-up"}
	if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "agent-7"}, ticketstest.OpID(id), in); !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("create: %v; want outcome unknown", err)
	}

	b := newBrowser(t, e.srv.URL)
	tok := token(t, "olivia", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin)
	b.do(chromedp.Navigate(e.srv.URL+"/console/signin#token="+tok), chromedp.WaitVisible(chromedp.CSS(`form[action="/console/signout"]`)))
	b.do(chromedp.Navigate(e.srv.URL + "/console/operations?status=unknown"))
	b.submit(chromedp.Click(chromedp.CSS(`table.list tbody tr td a`)))
	if h1 := b.text("h1"); !strings.Contains(h1, id) {
		t.Fatalf("opened %q, want operation %s", h1, id)
	}
	if got := b.text("#downstream"); !strings.Contains(got, "unknown") {
		t.Fatalf("downstream block = %q; want it unknown", got)
	}
	b.submit(chromedp.Click(chromedp.CSS(`#reconcile button[type="submit"]`)))
	if n := b.text(".notice"); !strings.Contains(n, "Reconciled") {
		t.Fatalf("after reconcile: notice %q", n)
	}
	b.screenshot("operation-unknown")
	b.do(chromedp.Click(chromedp.CSS(`#resolve input[value="succeeded"]`)),
		chromedp.SetValue(chromedp.CSS(`#resolve input[name="external_id"]`), "acme/widgets#1"),
		chromedp.SetValue(chromedp.CSS(`#resolve input[name="reason"]`), "Issue #1 carries this operation's marker"))
	b.submit(chromedp.Click(chromedp.CSS(`#resolve button[type="submit"]`)))
	if n := b.text(".notice"); !strings.Contains(n, "finding is recorded") {
		t.Fatalf("after resolve: notice %q", n)
	}
	if got := b.text("#history"); !strings.Contains(got, "olivia") || !strings.Contains(got, "Issue #1 carries this operation's marker") {
		t.Fatalf("history = %q; want olivia's reason", got)
	}
	b.screenshot("operation-resolved")

	res, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "agent-7"}, ticketstest.OpID(id), in)
	if err != nil || !res.Replayed || res.Ticket.ExternalID != "acme/widgets#1" {
		t.Fatalf("agent's retry = %+v, %v; want the resolved ticket replayed", res, err)
	}
	if n := gh.CreateRequests(); n != 1 {
		t.Errorf("create requests = %d, want 1", n)
	}
}
