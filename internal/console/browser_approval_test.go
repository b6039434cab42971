package console_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/tickets"
)

// onScreen is a script that is true when every element sel matches (at
// least one) is laid out inside the viewport's width: visible without
// sideways scrolling.
func onScreen(sel string) string {
	return `(() => { const els = [...document.querySelectorAll(` + "`" + sel + "`" + `)];
		return els.length > 0 && els.every(e => { const r = e.getBoundingClientRect();
			return r.width > 0 && r.left >= 0 && r.right <= window.innerWidth; }); })()`
}

// atPhoneWidth checks, at 390 px, that the page is no wider than the screen
// and that sel (a value the person decides on) is on it; it saves the
// screenshot name and returns to 1280 px.
func (b *browser) atPhoneWidth(sel, name string) {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	if over := run(b, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`)); over {
		b.t.Errorf("%s: at 390 px the page is wider than the screen", name)
	}
	if !run(b, chromedp.Evaluate[bool](onScreen(sel))) {
		b.t.Errorf("%s: at 390 px %s is not within the screen's width", name, sel)
	}
	b.screenshot(name)
	// Back to the window's 1280 px; EmulateReset leaves the mobile
	// layout in place.
	b.do(chromedp.EmulateViewport(1280, 860))
}

// TestBrowserApproval finishes in the console what the console started and
// the policy holds for approval, in headless Chromium: an urgent ticket
// (one approval, one ticket, counted in the database) and a bulk change of
// two selected tickets; it links two tickets on the ticket page; and at
// 390 px the value being approved is on the screen.
func TestBrowserApproval(t *testing.T) {
	t.Parallel()
	e, db := gatedEnv(t, 2)
	// The seed has an urgent ticket: it is written around the gate.
	seed(t, tickets.NewService(db, tickets.Options{}))
	ctx := context.Background()
	b := newBrowser(t, e.srv.URL)
	tok := token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove)
	b.do(chromedp.Navigate(e.srv.URL+"/console/signin#token="+url.QueryEscape(tok)),
		chromedp.WaitVisible(chromedp.CSS("table.list")))

	const title = "Checkout is down for every card payment"
	b.do(chromedp.Navigate(e.srv.URL+"/console/tickets/new"),
		chromedp.SetValue(chromedp.CSS("#title"), title),
		chromedp.SetValue(chromedp.CSS("#description"), "Payments time out after 30 s since the 14:02 deploy."),
		chromedp.SetValue(chromedp.CSS("#priority"), "urgent"))
	b.submit(chromedp.Click(chromedp.CSS(`#new-ticket button[type="submit"]`)))
	if to := b.text(`#pending-approval tr[data-field="priority"] td.to`); to != "urgent" {
		t.Fatalf("the pending approval shows the value %q, want urgent", to)
	}
	href := run(b, chromedp.AttributeValue(chromedp.CSS("#pending-link"), "href"))
	if !href.Exists || !strings.HasPrefix(href.Value, "/console/approvals/") {
		t.Fatalf("the banner links to %+v, want the approval's page", href)
	}
	b.screenshot("approval-form")
	b.atPhoneWidth(`#pending-approval tr[data-field="priority"] td.to`, "approval-form-phone")

	// The approval's own page, in a second tab of the same session.
	tab, cancel := chromedp.NewContext(b.ctx)
	defer cancel()
	page := &browser{t: t, ctx: tab, base: b.base, dir: b.dir}
	page.do(chromedp.Navigate(e.srv.URL + href.Value))
	if s := page.text(".summary"); !strings.Contains(s, "urgent") {
		t.Errorf("the approval page's summary %q does not say urgent", s)
	}
	page.screenshot("approval")
	page.atPhoneWidth(`#changes tr[data-field="priority"] td.to`, "approval-phone")
	cancel()

	b.submit(chromedp.Click(chromedp.CSS("#approve-and-submit")))
	if n := b.text(".notice"); n != "Ticket created." {
		t.Fatalf("after approve and create: notice %q", n)
	}
	created, err := e.svc.ListTickets(ctx, tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{Query: "checkout is down"})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Tickets) != 1 || created.Tickets[0].Priority != tickets.PriorityUrgent {
		t.Fatalf("tickets %+v, want exactly one urgent %q", created.Tickets, title)
	}
	if got := approvalStatuses(t, db); got["used"] != 1 || len(got) != 1 {
		t.Fatalf("approvals by status %v, want exactly one, used", got)
	}
	key := created.Tickets[0].Key

	// Links, both ends, and the assignee picker, on the ticket page.
	b.do(chromedp.SetValue(chromedp.CSS("#link-kind"), string(links.Blocks)),
		chromedp.SetValue(chromedp.CSS("#link-target"), "SUP-2"))
	b.submit(chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`)))
	if n := b.text(".notice"); n != "Link added." {
		t.Fatalf("after adding a link: notice %q", n)
	}
	if l := b.text(".links li"); !strings.Contains(l, "blocks") || !strings.Contains(l, "SUP-2") {
		t.Errorf("the ticket's links read %q, want blocks SUP-2", l)
	}
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("#people option").length`)); n < 2 {
		t.Errorf("the assignee picker offers %d people, want the directory", n)
	}
	b.screenshot("ticket-links")
	b.atPhoneWidth(".links li a", "ticket-links-phone")
	b.do(chromedp.Navigate(e.srv.URL + "/console/tickets/SUP-2"))
	if l := b.text(".links li"); !strings.Contains(l, "blocked by") || !strings.Contains(l, key) {
		t.Errorf("SUP-2's links read %q, want blocked by %s", l, key)
	}

	// Bulk: two tickets selected, one change, through approval.
	b.do(chromedp.Navigate(e.srv.URL+"/console/tickets"), chromedp.WaitVisible(chromedp.CSS("#bulk-form")),
		chromedp.Click(chromedp.CSS(`input[name="ref"][value="SUP-1"]`)),
		chromedp.Click(chromedp.CSS(`input[name="ref"][value="SUP-5"]`)),
		chromedp.SetValue(chromedp.CSS("#bulk-priority"), string(tickets.PriorityLow)),
		chromedp.SetValue(chromedp.CSS("#bulk-assignee"), "bob"))
	b.screenshot("bulk-select")
	b.atPhoneWidth(`input[name="ref"]`, "bulk-select-phone")
	b.submit(chromedp.Click(chromedp.CSS("#bulk-apply")))
	if n := run(b, chromedp.Evaluate[int](`document.querySelectorAll("#pending-approval td.to").length`)); n != 4 {
		t.Fatalf("the bulk approval lists %d changes, want 4 (priority and assignee of two tickets)", n)
	}
	b.screenshot("bulk-approval")
	b.atPhoneWidth("#pending-approval td.to", "bulk-approval-phone")
	b.submit(chromedp.Click(chromedp.CSS("#approve-and-submit")))
	if n := b.text(".notice"); !strings.HasPrefix(n, "The selected tickets were changed") {
		t.Fatalf("after approve and apply: notice %q", n)
	}
	for _, k := range []string{"SUP-1", "SUP-5"} {
		got, err := e.svc.GetTicket(ctx, tenant, k)
		if err != nil || got.Priority != tickets.PriorityLow || got.Assignee != "bob" {
			t.Errorf("%s: %+v, err %v; want low, bob", k, got, err)
		}
	}
	if got := approvalStatuses(t, db); got["used"] != 2 || len(got) != 1 {
		t.Errorf("approvals by status %v, want two, both used", got)
	}
}
