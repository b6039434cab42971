package console_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestBrowserSubTasks adds a sub-task from its parent's page in headless
// Chromium, through the new-ticket form the page's link fills in, and reads
// the family at 1280 and 390 px: the sub-tasks on the parent's page, the
// parent on the sub-task's, each within the screen's width.
func TestBrowserSubTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	seed(t, e.svc)
	b := newBrowser(t, e.srv.URL)
	tok := token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite)
	b.do(chromedp.Navigate(e.srv.URL+"/console/signin#token="+url.QueryEscape(tok)),
		chromedp.WaitVisible(chromedp.CSS("table.list")))

	b.do(chromedp.Navigate(e.srv.URL + "/console/tickets/SUP-1"))
	b.submit(chromedp.Click(chromedp.CSS("#add-subtask")))
	if v := run(b, chromedp.Value(chromedp.CSS("#parent"))); v != "SUP-1" {
		t.Fatalf("the new-ticket form reached from SUP-1 has parent %q, want SUP-1", v)
	}
	b.do(chromedp.SetValue(chromedp.CSS("#title"), "Order a replacement fuser"))
	b.screenshot("new-subtask")
	b.submit(chromedp.Click(chromedp.CSS(`#new-ticket button[type="submit"]`)))
	if n := b.text(".notice"); n != "Ticket created." {
		t.Fatalf("after creating the sub-task: notice %q", n)
	}
	if p := b.text("#parent a"); p != "SUP-1" {
		t.Fatalf("the new sub-task's page names parent %q, want SUP-1", p)
	}
	if !run(b, chromedp.Evaluate[bool](onScreen("#parent a"))) {
		t.Error("at 1280 px the parent link is not within the screen's width")
	}
	b.screenshot("ticket-subtask")
	b.atPhoneWidth("#parent a", "ticket-subtask-phone")

	if _, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)),
		tickets.NewTicket{ProjectID: "support", Title: "Move the printer away from the kettle", Parent: "SUP-1"}); err != nil {
		t.Fatal(err)
	}
	b.do(chromedp.Navigate(e.srv.URL+"/console/tickets/SUP-1"), chromedp.WaitVisible(chromedp.CSS(".subtasks")))
	keys := run(b, chromedp.Evaluate[string](`[...document.querySelectorAll(".subtasks li a")].map(a => a.textContent.trim()).join(" ")`))
	if keys != "SUP-6 SUP-7" {
		t.Fatalf("SUP-1 lists sub-tasks %q, want SUP-6 SUP-7", keys)
	}
	if !run(b, chromedp.Evaluate[bool](onScreen(".subtasks li a, #subtasks-more a, #add-subtask"))) {
		t.Error("at 1280 px a sub-task link is not within the screen's width")
	}
	b.screenshot("ticket-subtasks")
	b.atPhoneWidth(".subtasks li a, #subtasks-more a, #add-subtask", "ticket-subtasks-phone")
}
