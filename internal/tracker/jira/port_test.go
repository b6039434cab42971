package jira_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// portOn opens the project OPS of the fake at site through the port
// internal/tracked uses, with priorities mapped by priorityMap (nil: §22's).
func portOn(t *testing.T, site string, priorityMap map[string]string) tracker.Tracker {
	t.Helper()
	tr, err := jira.PortOpener(options("bot@acme.example:tok"))(tracker.Backend{Kind: tracker.KindJira, Site: site, ProjectKey: "OPS",
		Credential: "jira", Tenant: "acme", PriorityMap: priorityMap})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestPortCarriesPriorityAndAssignee: through the port, a create sends its
// priority by its priority_map name, an edit sets priority and assignee
// (an account found by email), and the issue read back shows both.
func TestPortCarriesPriorityAndAssignee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := jiratest.New("bot@acme.example", "tok")
	site := jiratest.Start(t, s)
	s.AddUser(jiratest.User{AccountID: "acc-ada", DisplayName: "Ada Lovelace", Email: "ada@acme.example"})
	tr := portOn(t, site, map[string]string{"low": "Lowest"})
	mark := tracker.Mark{Tenant: "acme", OperationID: "op-1"}
	created, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "Checkout down", Body: "Down.\n\n" + mark.Text(),
		Labels: []string{tracker.Label}, Mark: mark, Priority: "urgent"})
	if err != nil || created.Priority != "Highest" || s.Issues("OPS")[0].Priority != "Highest" {
		t.Fatalf("create = %+v, %v; want priority Highest (urgent by §22's map) in the fake", created, err)
	}
	acc, err := tr.Account(ctx, "ada@acme.example")
	if err != nil || acc != "acc-ada" {
		t.Fatalf("account = %q, %v", acc, err)
	}
	low := "low"
	got, err := tr.EditIssue(ctx, created.Ref, tracker.IssueEdit{Priority: &low, Assignee: &acc})
	stored := s.Issues("OPS")[0]
	if err != nil || got.Priority != "Lowest" || got.Assignee != "acc-ada" || stored.Priority != "Lowest" || stored.Assignee != "acc-ada" {
		t.Fatalf("edit = %+v, %v; fake holds %s for %q; want Lowest (the project's map) and acc-ada", got, err, stored.Priority, stored.Assignee)
	}
	nobody := ""
	if got, err := tr.EditIssue(ctx, created.Ref, tracker.IssueEdit{Assignee: &nobody}); err != nil || got.Assignee != "" || s.Issues("OPS")[0].Assignee != "" {
		t.Errorf("unassign = %+v, %v", got, err)
	}
}

// TestPortRefusesWhatItCannotMap: a priority the project's map lacks, and
// an address that is no one account, are tracker.ErrInvalid with nothing
// written: no create, edit or transition reaches the fake.
func TestPortRefusesWhatItCannotMap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := jiratest.New("bot@acme.example", "tok")
	site := jiratest.Start(t, s)
	// Jira matches an address by its start: this one shows another.
	s.AddUser(jiratest.User{AccountID: "acc-ada2", DisplayName: "Ada Byron", Email: "ada@acme.example.org"})
	tr := portOn(t, site, nil)
	mark := tracker.Mark{Tenant: "acme", OperationID: "op-1"}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, tracker.ErrInvalid) || !errors.Is(err, tracker.ErrNotSent) {
			t.Errorf("%s: %v; want ErrInvalid, not sent", what, err)
		}
	}
	_, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "T", Body: mark.Text(), Mark: mark, Priority: "critical"})
	refused("a create with an unmapped priority", err)
	if s.CreateRequests() != 0 {
		t.Fatalf("%d creates sent; want none", s.CreateRequests())
	}
	created, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "T", Body: mark.Text(), Mark: mark})
	if err != nil {
		t.Fatal(err)
	}
	critical, done := "critical", "resolved"
	_, err = tr.EditIssue(ctx, created.Ref, tracker.IssueEdit{Priority: &critical, Status: &done})
	refused("an edit with an unmapped priority", err)
	if s.EditRequests() != 0 || s.TransitionRequests() != 0 {
		t.Errorf("edits %d, transitions %d sent; want none", s.EditRequests(), s.TransitionRequests())
	}
	_, err = tr.Account(ctx, "ada@acme.example")
	refused("an address only another address starts with", err)
	if !errors.Is(err, jira.ErrNoAccount) {
		t.Errorf("account: %v; want ErrNoAccount", err)
	}
}
