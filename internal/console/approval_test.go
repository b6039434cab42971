package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

var approvalLink = regexp.MustCompile(`href="/console/approvals/([0-9a-f-]{36})"`)

// TestUrgentFormWaitsForApproval follows a person who files an urgent ticket
// in the console while approval is on: the form answers 428 with the
// pending approval, a link to it and the person's next step, and keeps its
// operation ID; nothing is written;
// the approval waits on the Approvals page, which her token (tickets:read
// and tickets:write, as an agent's) may not open; a person holding
// tickets:approve alone approves it; the same form submitted again then
// makes the ticket once, and again only replays it.
func TestUrgentFormWaitsForApproval(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	gate := approval.New(d.Gorm, approval.Options{Policy: approval.Policy{Enabled: true, BulkThreshold: approval.DefaultBulkThreshold}})
	svc := tickets.NewService(d.Gorm, tickets.Options{Approvals: gate})
	ticketstest.SeedSupport(t, svc, tenant)
	e := serveConsole(t, svc, d.Gorm, console.Config{Approvals: gate})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))

	f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Checkout is down")
	f.Set("priority", "urgent")
	p := read(t, e.post(t, c, "/console/tickets", f))
	if p.status != http.StatusPreconditionRequired || !strings.Contains(p.body, `id="pending-approval"`) || !approvalLink.MatchString(p.body) ||
		!strings.Contains(p.body, "submit the form below again as it is") || strings.Contains(p.body, `id="approve-and-submit"`) {
		t.Fatalf("urgent create: status %d, want 428 with the pending approval, its link and the person's next step, and no approve button for alice; body:\n%s", p.status, p.body)
	}
	if got := p.form(t, "new-ticket").Get("operation_id"); got != f.Get("operation_id") {
		t.Errorf("the form's operation ID changed from %s to %s; submitting it again after approval must be the same operation", f.Get("operation_id"), got)
	}
	if n := countTickets(t, svc); n != 0 {
		t.Fatalf("%d tickets before approval, want 0", n)
	}

	// Alice's token reads and writes, as an agent's does: the approval
	// pages refuse her, and so does a decision posted anyway.
	if p := e.get(t, c, "/console/approvals"); p.status != http.StatusForbidden || !strings.Contains(p.body, authn.ScopeApprove) {
		t.Fatalf("the approvals page without tickets:approve: status %d, want 403 naming the scope; body:\n%s", p.status, p.body)
	}
	// Carol holds tickets:approve alone, and decides what anyone in the
	// tenant asked for.
	carol := e.signedIn(t, token(t, "carol", time.Now(), authn.ScopeApprove))
	m := approvalLink.FindStringSubmatch(e.get(t, carol, "/console/approvals").body)
	if m == nil {
		t.Fatal("the pending approval is not on an approver's Approvals page")
	}
	if resp := e.post(t, c, "/console/approvals/"+m[1]+"/approve", f); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("alice approving without tickets:approve: status %d, want 403", resp.StatusCode)
	}
	if p := e.get(t, c, "/console/approvals/"+m[1]); p.status != http.StatusForbidden {
		t.Fatalf("alice opening the approval without tickets:approve: status %d, want 403", p.status)
	}
	decide := e.get(t, carol, "/console/approvals/"+m[1]).form(t, "approve-form")
	if resp := e.post(t, carol, "/console/approvals/"+m[1]+"/approve", decide); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: status %d, want 303", resp.StatusCode)
	}

	for i, want := range []string{"/console/tickets/SUP-1?done=created", "/console/tickets/SUP-1?done=create-replayed"} {
		resp := e.post(t, c, "/console/tickets", f)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Fatalf("submission %d after approval: status %d to %q, want 303 to %q", i+1, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	if n := countTickets(t, svc); n != 1 {
		t.Errorf("%d tickets after approval and a second submission, want 1", n)
	}
}

func countTickets(t *testing.T, svc *tickets.Service) int {
	t.Helper()
	page, err := svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenant}, tickets.ListTicketsParams{})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Tickets)
}
