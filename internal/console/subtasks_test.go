package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestTicketPageSubTasks follows the ticket page's "Add a sub-task" link to
// the new-ticket form, parent filled in, submits it twice (one sub-task),
// and reads the family on both pages: the sub-task on its parent's, the
// parent on the sub-task's. Past the 20 keys shown the page counts the rest
// and links to the ticket list of all of them.
func TestTicketPageSubTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	top := mustCreate(t, e.svc, "bob", "Office move")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))

	p := e.get(t, c, "/console/tickets/"+top.Key)
	add := `id="add-subtask" href="/console/tickets/new?parent=` + top.Key + `&amp;project=support"`
	if !strings.Contains(p.body, "No sub-tasks.") || !strings.Contains(p.body, add) || !strings.Contains(p.body, `<dd id="parent"><span class="muted">none</span>`) {
		t.Fatalf("a ticket without family: want no sub-tasks, no parent and the add link %s; body:\n%s", add, p.body)
	}
	p = e.get(t, c, "/console/tickets/new?parent="+top.Key+"&project=support")
	if !strings.Contains(p.body, `id="parent" name="parent" type="text" value="`+top.Key+`"`) {
		t.Fatalf("the new-ticket form does not carry the parent; body:\n%s", p.body)
	}
	f := p.form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Pack the printers")
	f.Set("priority", string(tickets.PriorityNormal))
	f.Set("parent", top.Key)
	for i, want := range []string{"/console/tickets/SUP-2?done=created", "/console/tickets/SUP-2?done=create-replayed"} {
		resp := e.post(t, c, "/console/tickets", f)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Fatalf("submission %d: status %d to %q, want 303 to %q", i+1, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	if p := e.get(t, c, "/console/tickets/"+top.Key); !strings.Contains(p.body, `<li><a href="/console/tickets/SUP-2">SUP-2</a></li>`) ||
		!strings.Contains(p.body, `Sub-tasks <span class="muted">(1)</span>`) || strings.Contains(p.body, "are shown") {
		t.Fatalf("the parent's page does not list its one sub-task; body:\n%s", p.body)
	}
	if p := e.get(t, c, "/console/tickets/SUP-2"); !strings.Contains(p.body, `<dd id="parent"><a href="/console/tickets/`+top.Key+`"`) {
		t.Fatalf("the sub-task's page does not link to its parent; body:\n%s", p.body)
	}

	for range 21 {
		if _, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(t)),
			tickets.NewTicket{ProjectID: "support", Title: "Label a box", Parent: top.Key}); err != nil {
			t.Fatal(err)
		}
	}
	p = e.get(t, c, "/console/tickets/"+top.Key)
	if n := strings.Count(p.body, `<li><a href="/console/tickets/SUP-`); n != 20 {
		t.Errorf("the parent's page lists %d sub-tasks, want the first 20", n)
	}
	if !strings.Contains(p.body, "The first 20 of 22 are shown.") || !strings.Contains(p.body, `<a href="/console/tickets?parent=`+top.Key+`">List all 22`) {
		t.Fatalf("past 20 sub-tasks the page neither counts them nor links to all; body:\n%s", p.body)
	}
	list := e.get(t, c, "/console/tickets?parent="+top.Key)
	if n := strings.Count(list.body, `data-label="Key"`); n != 22 || strings.Contains(list.body, `href="/console/tickets/`+top.Key+`">`+top.Key+`</a></td>`) ||
		!strings.Contains(list.body, `<input type="hidden" name="parent" value="`+top.Key+`">`) {
		t.Fatalf("the sub-task list has %d rows, want the 22 sub-tasks without the parent and the filter kept; body:\n%s", n, list.body)
	}
}

// TestSubTaskFormErrors keeps a new-ticket form's parent after the service
// refuses it, so the person sees what they typed.
func TestSubTaskFormErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	f := e.get(t, c, "/console/tickets/new").form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "Orphan")
	f.Set("priority", string(tickets.PriorityNormal))
	f.Set("parent", "SUP-999")
	p := read(t, e.post(t, c, "/console/tickets", f))
	if p.status != http.StatusNotFound || !strings.Contains(p.body, "not_found") || !strings.Contains(p.body, `id="parent" name="parent" type="text" value="SUP-999"`) {
		t.Fatalf("an unknown parent: status %d, want 404 not_found with the parent kept; body:\n%s", p.status, p.body)
	}
	if n := countTickets(t, e.svc); n != 0 {
		t.Errorf("%d tickets after a refused parent, want 0", n)
	}
}

// TestUrgentSubTaskThroughApproval files an urgent sub-task while approval
// is on: the form waits with its parent kept, and approving from it makes
// the one sub-task under that parent.
func TestUrgentSubTaskThroughApproval(t *testing.T) {
	t.Parallel()
	e, db := gatedEnv(t, 2)
	top := mustCreate(t, e.svc, "bob", "Office move")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove))
	f := e.get(t, c, "/console/tickets/new?parent="+top.Key).form(t, "new-ticket")
	f.Set("project_id", "support")
	f.Set("title", "The van is not booked")
	f.Set("priority", string(tickets.PriorityUrgent))
	f.Set("parent", top.Key)
	p := read(t, e.post(t, c, "/console/tickets", f))
	m := approvalLink.FindStringSubmatch(p.body)
	if p.status != http.StatusPreconditionRequired || m == nil || !strings.Contains(p.body, `id="parent" name="parent" type="text" value="`+top.Key+`"`) {
		t.Fatalf("urgent sub-task: status %d, want 428 with the approval and the parent kept; body:\n%s", p.status, p.body)
	}
	f.Set("approve", m[1])
	resp := e.post(t, c, "/console/tickets", f)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/console/tickets/SUP-2?done=created" {
		t.Fatalf("approve and create: status %d to %q, want 303 to SUP-2", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, children, err := e.svc.Family(context.Background(), tenant, top.ID)
	if err != nil || children.Count != 1 || children.Keys[0] != "SUP-2" {
		t.Fatalf("children of %s: %+v, err %v; want SUP-2", top.Key, children, err)
	}
	if got := approvalStatuses(t, db); got["used"] != 1 || len(got) != 1 {
		t.Errorf("approvals by status %v, want exactly one, used", got)
	}
}
