package tracked_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// A ticket's priority and assignee: a Jira issue holds both (the
// priority_map name, the account found by the assignee's email), a GitHub
// issue neither (they stay on the local row).

// user adds id to the tenant's directory with email ("" for none).
func user(t *testing.T, svc *tickets.Service, tenant, id, email string) {
	t.Helper()
	if _, err := svc.People().Create(context.Background(), tenant, people.User{ID: id, Email: email}); err != nil {
		t.Fatal(err)
	}
}

func TestJiraPriorityAndAssigneeReachTheIssue(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newJira(t, d, settle)
		e.jr.AddUser(jiratest.User{AccountID: "acc-ada", DisplayName: "Ada Lovelace", Email: "ada@acme.example"})
		user(t, e.svc, e.tenant, "ada", "ada@acme.example")
		in := opsTicket("Checkout is down")
		in.Priority = tickets.PriorityUrgent
		res, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(newID()), in)
		if err != nil || res.Ticket.Priority != tickets.PriorityUrgent {
			t.Fatalf("create = %+v, %v", res.Ticket, err)
		}
		if got := e.jr.Issues(jiraKey)[0]; got.Priority != "Highest" {
			t.Fatalf("the issue's priority = %q; want Highest, urgent's priority_map name", got.Priority)
		}
		ada, low := "ada", tickets.PriorityLow
		up, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(newID()), res.Ticket.Key, tickets.TicketUpdate{Assignee: &ada, Priority: &low})
		if err != nil || up.Ticket.Assignee != "ada" || up.Ticket.Priority != tickets.PriorityLow || up.Version != 2 {
			t.Fatalf("update = %+v, %v", up, err)
		}
		if got := e.jr.Issues(jiraKey)[0]; got.Assignee != "acc-ada" || got.Priority != "Low" || e.jr.EditRequests() != 1 {
			t.Fatalf("issue = %+v after %d edits; want ada's account acc-ada and priority Low in one edit", got, e.jr.EditRequests())
		}
		nobody := ""
		if _, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(newID()), res.Ticket.Key, tickets.TicketUpdate{Assignee: &nobody}); err != nil {
			t.Fatalf("unassign: %v", err)
		}
		if got := e.jr.Issues(jiraKey)[0]; got.Assignee != "" || e.jr.UserSearchRequests() != 1 {
			t.Errorf("issue = %+v after %d user searches; want it unassigned, with no search for nobody", got, e.jr.UserSearchRequests())
		}
	})
}

// TestJiraAssigneeWithNoAccountIsRefusedBeforeAnythingIsSent: an assignee
// with no email, or whose email is no one Jira account, is invalid_input on
// assignee; nothing is recorded and nothing written to Jira, so the same
// operation ID succeeds once the account exists.
func TestJiraAssigneeWithNoAccountIsRefusedBeforeAnythingIsSent(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newJira(t, d, settle)
		user(t, e.svc, e.tenant, "bob", "")
		user(t, e.svc, e.tenant, "carol", "carol@acme.example")
		res, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(newID()), opsTicket("Printer on fire"))
		if err != nil {
			t.Fatal(err)
		}
		refused := func(who, id, says string, searches int) {
			t.Helper()
			_, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(id), res.Ticket.Key, tickets.TicketUpdate{Assignee: &who})
			var ve *tickets.ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != "assignee" || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "nothing was sent") {
				t.Fatalf("assign %s: %v; want invalid_input on assignee saying %q", who, err, says)
			}
			if n, m, s := e.jr.EditRequests(), e.jr.TransitionRequests(), e.jr.UserSearchRequests(); n+m != 0 || s != searches {
				t.Errorf("assign %s: edits %d, transitions %d, user searches %d; want no write and %d searches", who, n, m, s, searches)
			}
			if _, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
				t.Errorf("assign %s: operation %v; want nothing recorded", who, err)
			}
		}
		refused("bob", newID(), "has no email", 0)
		id := newID()
		refused("carol", id, "carol@acme.example", 1)
		if tk, _ := e.svc.GetTicket(ctx, e.tenant, res.Ticket.Key); tk.Assignee != "" || tk.Version != 1 {
			t.Fatalf("ticket = %+v; want it unchanged", tk)
		}
		e.jr.AddUser(jiratest.User{AccountID: "acc-carol", DisplayName: "Carol Shaw", Email: "carol@acme.example"})
		carol := "carol"
		up, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(id), res.Ticket.Key, tickets.TicketUpdate{Assignee: &carol})
		if err != nil || up.Replayed || up.Ticket.Assignee != "carol" || e.jr.Issues(jiraKey)[0].Assignee != "acc-carol" {
			t.Fatalf("the same operation once carol has an account = %+v, %v", up, err)
		}
	})
}

// TestGitHubKeepsPriorityAndAssigneeLocal: a GitHub issue holds neither,
// so a create sends no priority and an update of only those is a local
// write: no edit request.
func TestGitHubKeepsPriorityAndAssigneeLocal(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newTracked(t, d, false)
		user(t, e.svc, e.tenant, "ada", "ada@acme.example")
		caller := tickets.Caller{Tenant: e.tenant, Subject: "alice"}
		in := ghTicket("Checkout is down")
		in.Priority = tickets.PriorityHigh
		res, err := e.svc.CreateTicket(ctx, caller, ticketstest.OpID(newID()), in)
		if err != nil || res.Ticket.Priority != tickets.PriorityHigh || len(e.gh.Issues(repo)) != 1 {
			t.Fatalf("create = %+v, %v", res.Ticket, err)
		}
		ada, urgent := "ada", tickets.PriorityUrgent
		up, err := e.svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), res.Ticket.Key, tickets.TicketUpdate{Assignee: &ada, Priority: &urgent})
		if err != nil || up.Ticket.Assignee != "ada" || up.Ticket.Priority != tickets.PriorityUrgent {
			t.Fatalf("update = %+v, %v", up, err)
		}
		if n := e.gh.EditRequests(); n != 0 {
			t.Errorf("edit requests = %d; want none: the update is a local write", n)
		}
	})
}
