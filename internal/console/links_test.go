package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/links"
)

// TestTicketPageLinks adds a link from the ticket page, submits the same
// form again (one link, told it was already done), sees the link on both
// tickets with the inverse kind, and removes it with its own button.
func TestTicketPageLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	a := mustCreate(t, e.svc, "bob", "Database failover")
	b := mustCreate(t, e.svc, "bob", "Checkout errors")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))

	f := e.get(t, c, "/console/tickets/"+a.Key).form(t, "link-form")
	f.Set("link", string(links.Blocks))
	f.Set("target", b.Key)
	for i, want := range []string{"done=linked", "done=link-replayed"} {
		resp := e.post(t, c, "/console/tickets/"+a.Key+"/links", f)
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), want) {
			t.Fatalf("submission %d: status %d to %q, want 303 with %s", i+1, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	got, err := e.svc.TicketLinks(context.Background(), tenant, a.ID)
	if err != nil || len(got) != 1 || got[0].Kind != links.Blocks || got[0].Key != b.Key {
		t.Fatalf("links of %s: %+v, err %v; want one: blocks %s", a.Key, got, err, b.Key)
	}
	if p := e.get(t, c, "/console/tickets/"+b.Key); !strings.Contains(p.body, `<span class="kind">blocked by</span> <a href="/console/tickets/`+a.Key+`">`) {
		t.Fatalf("the target's page does not show the inverse link; body:\n%s", p.body)
	}

	remove := e.get(t, c, "/console/tickets/"+b.Key).form(t, "link-form")
	remove.Set("link", string(links.BlockedBy))
	remove.Set("target", a.Key)
	remove.Set("remove", "1")
	resp := e.post(t, c, "/console/tickets/"+b.Key+"/links", remove)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "done=unlinked") {
		t.Fatalf("remove: status %d to %q, want 303 with done=unlinked", resp.StatusCode, resp.Header.Get("Location"))
	}
	if got, err := e.svc.TicketLinks(context.Background(), tenant, a.ID); err != nil || len(got) != 0 {
		t.Fatalf("after removing: links %+v, err %v; want none", got, err)
	}

	// A self-link is refused on the page, the typed target kept.
	f = e.get(t, c, "/console/tickets/"+a.Key).form(t, "link-form")
	f.Set("link", string(links.RelatesTo))
	f.Set("target", a.Key)
	p := read(t, e.post(t, c, "/console/tickets/"+a.Key+"/links", f))
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "invalid_input") || !strings.Contains(p.body, `id="link-target" name="target" type="text" value="`+a.Key+`"`) {
		t.Fatalf("self-link: status %d, want 400 invalid_input with the form kept; body:\n%s", p.status, p.body)
	}
}

// TestAssigneePickerListsTheDirectory shows the tenant directory's people as
// the assignee field's choices: a subject is in it from its first write.
func TestAssigneePickerListsTheDirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, console.Config{})
	tk := mustCreate(t, e.svc, "bob", "Printer jam")
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	p := e.get(t, c, "/console/tickets/"+tk.Key)
	if !strings.Contains(p.body, `list="people"`) || !strings.Contains(p.body, `<option value="bob"></option>`) {
		t.Fatalf("the assignee field offers no directory; body:\n%s", p.body)
	}
}
