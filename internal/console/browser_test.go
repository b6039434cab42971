package console_test

import (
	"context"
	"flag"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the browser test's screenshots to docs/console/")

// EnvRequireBrowser, when 1 (make test sets it), turns a missing Chromium
// from a skip into a failure.
const EnvRequireBrowser = "TICKETD_REQUIRE_BROWSER"

// EnvScreenshotDir names where the browser test saves its screenshots, for
// CI to keep as artefacts; a temporary directory otherwise.
const EnvScreenshotDir = "TICKETD_SCREENSHOT_DIR"

// EnvChromium names a browser binary to use instead of chromium on the PATH
// (e.g. Chrome on macOS).
const EnvChromium = "TICKETD_CHROMIUM"

func chromium(t *testing.T) string {
	t.Helper()
	if path := os.Getenv(EnvChromium); path != "" {
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv(EnvRequireBrowser) == "1" {
		t.Fatalf("%s=1 but Chromium is not installed; run scripts/ensure-chromium.sh", EnvRequireBrowser)
	}
	t.Skipf("the browser test needs Chromium (scripts/ensure-chromium.sh installs it; %s=1 makes its absence a failure)", EnvRequireBrowser)
	return ""
}

func screenshotDir(t *testing.T) string {
	t.Helper()
	if *updateScreenshots {
		dir := filepath.Join("..", "..", "docs", "console")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	if dir := os.Getenv(EnvScreenshotDir); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// browser drives one headless Chromium tab.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	dir  string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// chromedp loses track of a page restored from the back/forward
		// cache; without it, going back reloads the page from the HTTP cache,
		// which must give the form back with the same key.
		chromedp.Flag("disable-features", "BackForwardCache"),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1280, 860),
	)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelTab()
		cancelAlloc()
	})
	return &browser{t: t, ctx: ctx, base: base, dir: screenshotDir(t)}
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

// submit runs steps that navigate (a click on a submit button or link) and
// waits for the new page.
func (b *browser) submit(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if _, err := chromedp.RunResponse(b.ctx, steps...); err != nil {
		b.t.Fatal(err)
	}
}

func run[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(run(b, chromedp.Text(chromedp.CSS(sel))))
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := run(b, chromedp.FullScreenshot(100))
	path := filepath.Join(b.dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// seed fills the tenant with a few tickets in different states, so the
// pages look like a console in use.
func seed(t *testing.T, svc *tickets.Service) {
	t.Helper()
	ctx := context.Background()
	type seeded struct {
		title, description string
		priority           tickets.Priority
		labels             []string
		update             *tickets.TicketUpdate
	}
	status := func(s tickets.Status) *tickets.Status { return &s }
	who := func(s string) *string { return &s }
	for _, s := range []seeded{
		{"Printer on fire in the third-floor office", "Smoke coming out of the HP LaserJet next to the kitchen. Unplugged it for now.",
			tickets.PriorityHigh, []string{"hardware", "office"}, nil},
		{"Login page rejects valid passwords after a reset", "Users who reset their password are told it is wrong until they clear cookies.",
			tickets.PriorityUrgent, []string{"auth"}, &tickets.TicketUpdate{Assignee: who("alice")}},
		{"CSV export drops the last row", "", tickets.PriorityNormal, []string{"export"},
			&tickets.TicketUpdate{Status: status(tickets.StatusInProgress), Assignee: who("bob")}},
		{"Dark mode colours are unreadable in Firefox", "", tickets.PriorityLow, []string{"ui"}, nil},
		{"Nightly backup took six hours", "It normally takes forty minutes.", tickets.PriorityNormal, []string{"ops"},
			&tickets.TicketUpdate{Status: status(tickets.StatusResolved)}},
	} {
		res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), tickets.NewTicket{
			ProjectID: "support", Title: s.title, Description: s.description, Priority: s.priority, Labels: s.labels})
		if err != nil {
			t.Fatal(err)
		}
		if s.update != nil {
			if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), res.Ticket.Key, *s.update); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestBrowser walks the console as a person would, in headless Chromium:
// sign in through a link, search, open a ticket, move it, comment, and
// submit one rendered new-ticket form twice (the second time after going
// back), which must make one ticket.
func TestBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	seed(t, e.svc)
	ctx := context.Background()
	b := newBrowser(t, e.srv.URL)
	tok := token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite)

	b.do(chromedp.Navigate(e.srv.URL + "/console/signin"))
	b.screenshot("signin")

	// The link form: the token rides in the fragment, which the browser
	// never sends; the page's script posts it and clears it.
	b.do(chromedp.Navigate("about:blank"))
	b.do(chromedp.Navigate(e.srv.URL+"/console/signin#token="+url.QueryEscape(tok)),
		chromedp.WaitVisible(chromedp.CSS("table.list")))
	if loc := run(b, chromedp.Location()); loc != e.srv.URL+"/console/tickets" {
		t.Fatalf("after signing in through the link, at %q", loc)
	}
	b.screenshot("tickets")
	for _, uri := range e.requestURIs() {
		if strings.Contains(uri, tok) || strings.Contains(uri, url.QueryEscape(tok)) {
			t.Fatalf("the token reached the server in a URL: %s", uri)
		}
	}

	b.do(chromedp.SetValue(chromedp.CSS(`input[name="q"]`), "printer"))
	b.submit(chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)))
	if rows := run(b, chromedp.Evaluate[int](`document.querySelectorAll("table.list tbody tr").length`)); rows != 1 {
		t.Fatalf("search for printer: %d rows, want 1", rows)
	}
	b.screenshot("search")

	b.submit(chromedp.Click(chromedp.CSS(`table.list tbody tr td a`)))
	if h1 := b.text("h1"); !strings.Contains(h1, "SUP-1") {
		t.Fatalf("opened %q, want SUP-1", h1)
	}
	b.screenshot("ticket")

	b.submit(chromedp.Click(chromedp.CSS(`button.move-in_progress`)))
	if n := b.text(".notice"); n != "Ticket updated." {
		t.Fatalf("after the transition: notice %q", n)
	}
	got, err := e.svc.GetTicket(ctx, tenant, "SUP-1")
	if err != nil || got.Status != tickets.StatusInProgress || got.Version != 2 {
		t.Fatalf("SUP-1 %+v, err %v; want in_progress at version 2", got, err)
	}

	b.do(chromedp.SetValue(chromedp.CSS("#body"), "Facilities replaced the fuser; printing again."))
	b.submit(chromedp.Click(chromedp.CSS(`#comment-form button[type="submit"]`)))
	if n := b.text(".notice"); n != "Comment added." {
		t.Fatalf("after commenting: notice %q", n)
	}
	comments, err := e.svc.ListComments(ctx, tenant, "SUP-1", tickets.ListParams{})
	if err != nil || len(comments.Comments) != 1 || comments.Comments[0].Author != "alice" {
		t.Fatalf("comments %+v, err %v; want one by alice", comments.Comments, err)
	}
	b.screenshot("ticket-updated")

	// Someone else retitles the ticket while the edit form is open: saving
	// the stale form is a version conflict that shows the current values.
	retitled := "Printer on fire on the third floor (HP LaserJet)"
	if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)), "SUP-1", tickets.TicketUpdate{Title: &retitled}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#edit-priority"), "urgent"))
	b.submit(chromedp.Click(chromedp.CSS(`#edit-form button[type="submit"]`)))
	if p := b.text(".problem"); !strings.Contains(p, "version_conflict") {
		t.Fatalf("saving a stale form: problem %q, want version_conflict", p)
	}
	if v := run(b, chromedp.Value(chromedp.CSS("#edit-title"))); v != retitled {
		t.Fatalf("after the conflict the form shows title %q, want the current %q", v, retitled)
	}
	b.screenshot("conflict")

	// One rendered form, submitted twice: the second time after going back
	// to it, as a person does when the first reply seems lost.
	const title = "Quarterly report will not print"
	b.do(chromedp.Navigate(e.srv.URL+"/console/tickets/new"),
		chromedp.SetValue(chromedp.CSS("#title"), title),
		chromedp.SetValue(chromedp.CSS("#description"), "Finance needs it by Friday."),
		chromedp.SetValue(chromedp.CSS("#priority"), "high"),
		chromedp.SetValue(chromedp.CSS("#labels"), "printing, finance"))
	key := run(b, chromedp.Value(chromedp.CSS(`#new-ticket input[name="operation_id"]`)))
	b.screenshot("new")
	b.submit(chromedp.Click(chromedp.CSS(`#new-ticket button[type="submit"]`)))
	if n := b.text(".notice"); n != "Ticket created." {
		t.Fatalf("after the first submit: notice %q", n)
	}
	b.do(chromedp.NavigateBack())
	if again := run(b, chromedp.Value(chromedp.CSS(`#new-ticket input[name="operation_id"]`))); again != key {
		t.Fatalf("back on the form its key is %s, was %s", again, key)
	}
	if v := run(b, chromedp.Value(chromedp.CSS("#title"))); v != title {
		t.Fatalf("back on the form its title is %q", v)
	}
	b.submit(chromedp.Click(chromedp.CSS(`#new-ticket button[type="submit"]`)))
	if n := b.text(".notice"); !strings.HasPrefix(n, "Already done") {
		t.Fatalf("after the second submit: notice %q, want it to say already done", n)
	}
	b.screenshot("replayed")
	page, err := e.svc.ListTickets(ctx, tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{Query: "quarterly report"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tickets) != 1 || page.Tickets[0].Title != title || page.Tickets[0].Priority != tickets.PriorityHigh {
		t.Fatalf("tickets %+v, want exactly one %q", page.Tickets, title)
	}

	b.do(chromedp.Navigate(e.srv.URL + "/console/operations"))
	b.screenshot("operations")
	b.do(chromedp.Navigate(e.srv.URL + "/console/projects"))
	b.screenshot("projects")
}

// TestBrowserViews opens the views operators asked for in
// headless Chromium: "Needs attention" lists the unassigned tickets that
// are not closed, "Mine" the signed-in person's, and the filter form takes
// several statuses and a sort. At phone width the page is no wider than the
// screen: the navigation wraps and the table's rows stack into cards.
func TestBrowserViews(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	seed(t, e.svc)
	b := newBrowser(t, e.srv.URL)
	tok := token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite)
	b.do(chromedp.Navigate(e.srv.URL+"/console/signin#token="+url.QueryEscape(tok)),
		chromedp.WaitVisible(chromedp.CSS("table.list")))
	keys := func() string {
		t.Helper()
		return run(b, chromedp.Evaluate[string](`[...document.querySelectorAll("table.list tbody tr td:first-child")].map(td => td.textContent.trim()).join(" ")`))
	}

	// Unassigned and not closed, most urgent first: SUP-1 (high), SUP-5
	// (normal, resolved), SUP-4 (low); SUP-2 and SUP-3 are assigned.
	b.submit(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="view=attention"]`)))
	if got := keys(); got != "SUP-1 SUP-5 SUP-4" {
		t.Errorf("needs attention lists %q, want SUP-1 SUP-5 SUP-4", got)
	}
	b.screenshot("attention")

	b.submit(chromedp.Click(chromedp.CSS(`nav.tabs a[href$="view=mine"]`)))
	if got := keys(); got != "SUP-2" {
		t.Errorf("mine (alice) lists %q, want SUP-2", got)
	}

	// Two statuses at once, most urgent first.
	b.do(chromedp.Navigate(e.srv.URL + "/console/tickets"))
	b.do(chromedp.Click(chromedp.CSS(`input[name="status"][value="open"]`)),
		chromedp.Click(chromedp.CSS(`input[name="status"][value="in_progress"]`)),
		chromedp.SetValue(chromedp.CSS(`select[name="sort"]`), string(tickets.SortPriorityDesc)))
	b.submit(chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)))
	if got := keys(); got != "SUP-2 SUP-1 SUP-3 SUP-4" {
		t.Errorf("open or in progress, most urgent first: %q, want SUP-2 SUP-1 SUP-3 SUP-4", got)
	}
	b.screenshot("statuses")

	// Phone width.
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	b.do(chromedp.Navigate(e.srv.URL+"/console/tickets?view=attention"), chromedp.WaitVisible(chromedp.CSS("table.list")))
	if over := run(b, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); over {
		t.Error("at phone width the page is wider than the screen")
	}
	if !run(b, chromedp.Evaluate[bool](onScreen(`table.list td[data-label="Priority"] .priority`))) {
		t.Error("at phone width a ticket's priority is off the screen: the rows do not stack into cards")
	}
	if !run(b, chromedp.Evaluate[bool](`document.querySelector(".top nav").getBoundingClientRect().top > document.querySelector(".top .brand").getBoundingClientRect().bottom`)) {
		t.Error("at phone width the navigation does not wrap below the brand")
	}
	b.screenshot("attention-phone")
	b.do(chromedp.Navigate(e.srv.URL + "/console/tickets/SUP-1"))
	if over := run(b, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); over {
		t.Error("at phone width the ticket page is wider than the screen")
	}
	b.screenshot("ticket-phone")
}
