package console_test

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// gatedEnv is a console whose service asks for approval of urgent tickets
// and of bulk updates from bulkThreshold tickets, with the database it
// keeps the approvals in.
func gatedEnv(t testing.TB, bulkThreshold int) (*env, *gorm.DB) {
	t.Helper()
	d := dbtest.SQLite(t)
	gate := approval.New(d.Gorm, approval.Options{Policy: approval.Policy{Enabled: true, BulkThreshold: bulkThreshold}})
	svc := tickets.NewService(d.Gorm, tickets.Options{Approvals: gate})
	ticketstest.SeedSupport(t, svc, tenant)
	return serveConsole(t, svc, d.Gorm, console.Config{Approvals: gate}), d.Gorm
}

// approvalStatuses counts the tenant's approvals by status.
func approvalStatuses(t testing.TB, db *gorm.DB) map[string]int {
	t.Helper()
	var rows []struct{ Status string }
	if err := db.Table("approvals").Select("status").Where("tenant_id = ?", tenant).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Status]++
	}
	return out
}

var approveButton = regexp.MustCompile(`<button type="submit" form="bulk-form" name="approve" value="([0-9a-f-]{36})"`)

// TestBulkSelectThroughApproval selects two tickets on the tickets page and
// lowers their priority: with the bulk threshold at two the change waits
// for approval on the bulk page, which shows what changes; its approve
// button approves and applies it in one step, once, and submitting the
// same form again only replays it.
func TestBulkSelectThroughApproval(t *testing.T) {
	t.Parallel()
	e, db := gatedEnv(t, 2)
	a := mustCreate(t, e.svc, "bob", "Printer jam")
	b := mustCreate(t, e.svc, "bob", "Scanner jam")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove))

	f := e.get(t, c, "/console/tickets").form(t, "bulk-form")
	f["ref"] = []string{a.Key, b.Key}
	f.Set("priority", string(tickets.PriorityLow))
	p := read(t, e.post(t, c, "/console/tickets/bulk", f))
	if p.status != http.StatusPreconditionRequired || !strings.Contains(p.body, `id="pending-approval"`) {
		t.Fatalf("bulk of 2 at threshold 2: status %d, want 428 with the pending approval; body:\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `<td data-label="To" class="to">low</td>`) {
		t.Errorf("the bulk page does not show the value being approved; body:\n%s", p.body)
	}
	m := approveButton.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no approve-and-apply button for alice, who holds tickets:approve; body:\n%s", p.body)
	}
	again := p.form(t, "bulk-form")
	if again.Get("operation_id") != f.Get("operation_id") {
		t.Fatalf("the bulk form's key changed from %s to %s", f.Get("operation_id"), again.Get("operation_id"))
	}

	f.Set("approve", m[1])
	for i, want := range []string{"done=bulk-updated", "done=bulk-replayed"} {
		resp := e.post(t, c, "/console/tickets/bulk", f)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), want) {
			t.Fatalf("submission %d with approve: status %d to %q, want 303 with %s", i+1, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	for _, k := range []string{a.Key, b.Key} {
		got, err := e.svc.GetTicket(context.Background(), tenant, k)
		if err != nil || got.Priority != tickets.PriorityLow || got.Version != 2 {
			t.Errorf("%s: %+v, err %v; want low at version 2", k, got, err)
		}
	}
	if got := approvalStatuses(t, db); got["used"] != 1 || len(got) != 1 {
		t.Errorf("approvals by status %v, want exactly one, used", got)
	}
}

// TestApproveButtonChecksTheForm refuses an approve button that names
// another operation's approval (a tampered form) and one pressed without
// tickets:approve; neither decides anything.
func TestApproveButtonChecksTheForm(t *testing.T) {
	t.Parallel()
	e, db := gatedEnv(t, 2)
	alice := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove))
	bob := e.signedIn(t, token(t, "bob", time.Now(), authn.ScopeRead, authn.ScopeWrite))

	urgent := func(c *http.Client, canApprove bool) (string, string) {
		f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
		f.Set("project_id", "support")
		f.Set("title", "Checkout is down")
		f.Set("priority", "urgent")
		p := read(t, e.post(t, c, "/console/tickets", f))
		m := approvalLink.FindStringSubmatch(p.body)
		if p.status != http.StatusPreconditionRequired || m == nil {
			t.Fatalf("urgent create: status %d, want 428 linking the approval; body:\n%s", p.status, p.body)
		}
		if got := strings.Contains(p.body, `id="approve-and-submit"`); got != canApprove {
			t.Errorf("approve-and-create button shown %v, want %v", got, canApprove)
		}
		return f.Get("operation_id"), m[1]
	}
	_, first := urgent(alice, true)
	f := e.get(t, alice, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Another")
	f.Set("priority", "urgent")
	f.Set("approve", first)
	if p := read(t, e.post(t, alice, "/console/tickets", f)); p.status != http.StatusBadRequest || !strings.Contains(p.body, "another operation") {
		t.Fatalf("approving another form's approval: status %d, want 400 naming it; body:\n%s", p.status, p.body)
	}

	opID, second := urgent(bob, false)
	f = e.get(t, bob, "/console/tickets/new").form(t, "new-ticket")
	f.Set("operation_id", opID)
	f.Set("project_id", "support")
	f.Set("title", "Checkout is down")
	f.Set("priority", "urgent")
	f.Set("approve", second)
	if p := read(t, e.post(t, bob, "/console/tickets", f)); p.status != http.StatusForbidden {
		t.Fatalf("bob approving without tickets:approve: status %d, want 403; body:\n%s", p.status, p.body)
	}
	if got := approvalStatuses(t, db); got["pending"] != 2 || len(got) != 1 {
		t.Errorf("approvals by status %v, want two pending and nothing decided", got)
	}
	if n := countTickets(t, e.svc); n != 0 {
		t.Errorf("%d tickets, want none", n)
	}
}

// TestUrgentEditApprovedOnTheTicketPage raises a ticket to urgent with the
// ticket page's edit form: the page comes back with the pending approval,
// the edit form keeps its key and values, and its approve button saves the
// change with that one approval.
func TestUrgentEditApprovedOnTheTicketPage(t *testing.T) {
	t.Parallel()
	e, db := gatedEnv(t, approval.DefaultBulkThreshold)
	tk := mustCreate(t, e.svc, "bob", "Checkout is slow")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove))

	f := e.get(t, c, "/console/tickets/"+tk.Key).form(t, "edit-form")
	f.Set("title", tk.Title)
	f.Set("priority", string(tickets.PriorityUrgent))
	p := read(t, e.post(t, c, "/console/tickets/"+tk.Key+"/update", f))
	m := regexp.MustCompile(`form="edit-form" name="approve" value="([0-9a-f-]{36})"`).FindStringSubmatch(p.body)
	if p.status != http.StatusPreconditionRequired || m == nil || !strings.Contains(p.body, `<option value="urgent" selected>`) {
		t.Fatalf("urgent edit: status %d, want 428 with an approve button on the edit form, urgent still chosen; body:\n%s", p.status, p.body)
	}
	if got := p.form(t, "edit-form").Get("operation_id"); got != f.Get("operation_id") {
		t.Fatalf("the edit form's key changed from %s to %s", f.Get("operation_id"), got)
	}
	f.Set("approve", m[1])
	resp := e.post(t, c, "/console/tickets/"+tk.Key+"/update", f)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=updated") {
		t.Fatalf("approve and save: status %d to %q, want 303 with done=updated", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got, err := e.svc.GetTicket(context.Background(), tenant, tk.Key); err != nil || got.Priority != tickets.PriorityUrgent || got.Version != 2 {
		t.Fatalf("%s: %+v, err %v; want urgent at version 2", tk.Key, got, err)
	}
	if got := approvalStatuses(t, db); got["used"] != 1 || len(got) != 1 {
		t.Errorf("approvals by status %v, want exactly one, used", got)
	}
}
