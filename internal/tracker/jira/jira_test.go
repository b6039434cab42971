package jira_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// options reach a loopback fake as --dev does, with one credential "jira"
// in the variable JIRA_TOKEN holding secret.
func options(secret string) jira.Options {
	return jira.Options{Timeout: 5 * time.Second, Credentials: tracker.Credentials{{Name: "jira", Env: "JIRA_TOKEN"}},
		Getenv: func(name string) string {
			if name == "JIRA_TOKEN" {
				return secret
			}
			return ""
		},
		Guard: ssrf.Guard{AllowPrivate: true}}
}

func config(site string) jira.Config {
	return jira.Config{Site: site, ProjectKey: "OPS", Credential: "jira", Tenant: "acme"}
}

func open(t *testing.T, site, secret string) *jira.Project {
	t.Helper()
	p, err := jira.Open(config(site), options(secret))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fake is a fake Jira admitting bot@acme.example:tok, and a project on it.
func fake(t *testing.T) (*jiratest.Server, string, *jira.Project) {
	t.Helper()
	s := jiratest.New("bot@acme.example", "tok")
	site := jiratest.Start(t, s)
	return s, site, open(t, site, "bot@acme.example:tok")
}

// TestCreateIsMarkedAndFoundOnceIndexed: an issue ticketd files carries
// both labels and the marker text in its ADF description; a get by key
// sees it at once, the marker search only once the index has caught up.
func TestCreateIsMarkedAndFoundOnceIndexed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, site, p := fake(t)
	s.LagSearch(2 * time.Second)
	created, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams",
		Description: "It jams.\nOn line 3.", Priority: "urgent", Labels: []string{"ticketd"}})
	if err != nil || created.Key != "OPS-1" || created.URL != site+"/browse/OPS-1" || created.Priority != "Highest" {
		t.Fatalf("create = %+v, %v", created, err)
	}
	stored := s.Issues("OPS")
	op := jira.OpLabel("acme", "op-1")
	if len(stored) != 1 || strings.Join(stored[0].Labels, ",") != "ticketd,"+op || stored[0].IssueType != "Task" || stored[0].Priority != "Highest" {
		t.Fatalf("stored = %+v; want labels ticketd and %s, a Task of priority Highest", stored, op)
	}
	if len(op) != len("ticketd-op-")+16 {
		t.Errorf("operation label %q: want 16 hex digits", op)
	}
	got, err := p.GetIssue(ctx, created.Key)
	if err != nil || got.Status != "To Do" || got.CreatedAt.IsZero() || got.ID != created.ID ||
		got.Description != "It jams.\nOn line 3.\n\n"+tracker.Marker("acme", "op-1") {
		t.Fatalf("get = %+v, %v; want the description with its marker paragraph", got, err)
	}
	if found, err := p.FindMarked(ctx, "acme", "op-1"); err != nil || len(found) != 0 {
		t.Errorf("marker search while the index lags = %+v, %v; want nothing yet", found, err)
	}
	found := eventually(t, func() ([]jira.Issue, error) { return p.FindMarked(ctx, "acme", "op-1") })
	if len(found) != 1 || found[0].Key != "OPS-1" || found[0].Title != "Widget jams" {
		t.Errorf("marker search after the lag = %+v; want OPS-1", found)
	}
	if other, err := p.FindMarked(ctx, "acme", "op-2"); err != nil || len(other) != 0 {
		t.Errorf("another operation's marker = %+v, %v; want nothing", other, err)
	}
}

// eventually calls find until it finds something, for up to 10s.
func eventually(t *testing.T, find func() ([]jira.Issue, error)) []jira.Issue {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found, err := find()
		if err != nil {
			t.Fatal(err)
		}
		if len(found) > 0 || time.Now().After(deadline) {
			return found
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSearchFollowsPages: a marker search lists every issue with the label
// across pages, oldest first.
func TestSearchFollowsPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, p := fake(t)
	s.FailCreates(jiratest.DuplicateCreate)
	if _, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "dup", Title: "twice"}); err != nil {
		t.Fatal(err)
	}
	for range 230 {
		if _, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "many", Title: "n"}); err != nil {
			t.Fatal(err)
		}
	}
	all, err := p.FindByLabel(ctx, tracker.Label)
	if err != nil || len(all) != 232 || all[0].Key != "OPS-1" || all[231].Key != "OPS-232" {
		t.Fatalf("search = %d issues, %v; want 232 oldest first", len(all), err)
	}
	if dup, err := p.FindMarked(ctx, "acme", "dup"); err != nil || len(dup) != 2 {
		t.Errorf("a duplicated create's marker = %d issues, %v; want both", len(dup), err)
	}
}

// TestCommentsCarryTheirMarker: a comment's text comes back from the list
// with its marker; a deleted duplicate is gone from it.
func TestCommentsCarryTheirMarker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, site, p := fake(t)
	issue, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"})
	if err != nil {
		t.Fatal(err)
	}
	body := "Seen again.\n\n" + tracker.ActionMarker("acme", "add_comment", "op-2")
	s.FailComments(jiratest.DuplicateCreate)
	c, err := p.CreateComment(ctx, issue.Key, body)
	if err != nil || c.Body != body || c.Issue != issue.Key || !strings.HasPrefix(c.URL, site+"/browse/OPS-1?focusedCommentId=") {
		t.Fatalf("comment = %+v, %v", c, err)
	}
	listed, err := p.ListComments(ctx, issue.Key)
	if err != nil || len(listed) != 2 || listed[0].ID != c.ID || listed[1].Body != body {
		t.Fatalf("list = %+v, %v; want the comment and its duplicate, oldest first", listed, err)
	}
	if err := p.DeleteComment(ctx, issue.Key, listed[1].ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if listed, err := p.ListComments(ctx, issue.Key); err != nil || len(listed) != 1 || listed[0].ID != c.ID {
		t.Errorf("after the delete = %+v, %v; want the first alone", listed, err)
	}
	if err := p.DeleteComment(ctx, issue.Key, listed[1].ID); !errors.Is(err, tracker.ErrRejected) {
		t.Errorf("delete of a deleted comment: %v; want a 404 (rejected)", err)
	}
	for range 120 {
		if _, err := p.CreateComment(ctx, issue.Key, "n"); err != nil {
			t.Fatal(err)
		}
	}
	if many, err := p.ListComments(ctx, issue.Key); err != nil || len(many) != 121 {
		t.Errorf("list across pages = %d, %v; want 121", len(many), err)
	}
}

// TestStatusGoesThroughTransitions: a status is reached by the workflow's
// transition; one already reached sends nothing; one with no transition
// from where the issue is refused, naming the ones available.
func TestStatusGoesThroughTransitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, p := fake(t)
	issue, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetStatus(ctx, issue.Key, "in_progress"); err != nil {
		t.Fatalf("to in_progress: %v", err)
	}
	if err := p.SetStatus(ctx, issue.Key, "in_progress"); err != nil || s.TransitionRequests() != 1 {
		t.Errorf("again: %v, %d transitions sent; want none more", err, s.TransitionRequests())
	}
	s.SetWorkflow(jiratest.Workflow{Statuses: []string{"To Do", "In Progress", "Done"}, Transitions: []jiratest.Transition{
		{ID: "31", Name: "Stop progress", From: []string{"In Progress"}, To: "To Do"},
	}})
	err = p.SetStatus(ctx, issue.Key, "resolved")
	var none *jira.NoTransitionError
	if !errors.As(err, &none) || !errors.Is(err, jira.ErrInvalid) || !errors.Is(err, tracker.ErrNotSent) ||
		!strings.Contains(err.Error(), "Stop progress → To Do") || !strings.Contains(err.Error(), `"Done"`) {
		t.Errorf("to resolved with no transition: %v; want ErrInvalid naming Stop progress → To Do", err)
	}
	if err := p.SetStatus(ctx, issue.Key, "blocked"); !errors.Is(err, jira.ErrInvalid) {
		t.Errorf("an unmapped status: %v; want ErrInvalid", err)
	}
	if got, _ := p.GetIssue(ctx, issue.Key); got.Status != "In Progress" {
		t.Errorf("status = %q, want it left In Progress", got.Status)
	}
}

// TestDuplicateIsClosedAndLabelled: a duplicate is moved to the done
// status and labelled, its markers kept.
func TestDuplicateIsClosedAndLabelled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, p := fake(t)
	issue, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a retry of an unknown outcome runs it again
		if err := p.CloseDuplicate(ctx, issue.Key); err != nil {
			t.Fatalf("close duplicate: %v", err)
		}
	}
	got, err := p.GetIssue(ctx, issue.Key)
	if err != nil || got.Status != "Done" || strings.Join(got.Labels, ",") != "ticketd,"+jira.OpLabel("acme", "op-1")+","+jira.DuplicateLabel {
		t.Errorf("duplicate = %+v, %v; want Done, labelled ticketd-duplicate, its markers kept", got, err)
	}
}

// TestEditSetsFieldsAndAssignee: an edit sets the fields it names; an
// assignee is the one account user search finds, or refused.
func TestEditSetsFieldsAndAssignee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, p := fake(t)
	s.AddUser(jiratest.User{AccountID: "acc-ada", DisplayName: "Ada Lovelace", Email: "ada@acme.example"})
	s.AddUser(jiratest.User{AccountID: "acc-adam", DisplayName: "Adam Smith", Email: "adam@acme.example"})
	issue, err := p.CreateIssue(ctx, jira.NewIssue{Tenant: "acme", OperationID: "op-1", Title: "Widget jams"})
	if err != nil {
		t.Fatal(err)
	}
	acc, err := p.Account(ctx, "ada@acme.example")
	if err != nil || acc != "acc-ada" {
		t.Fatalf("account of ada@acme.example = %q, %v", acc, err)
	}
	for _, who := range []string{"ada", "nobody"} {
		if _, err := p.Account(ctx, who); !errors.Is(err, jira.ErrNoAccount) || !errors.Is(err, tracker.ErrNotSent) {
			t.Errorf("account of %q: %v; want ErrNoAccount (two match, or none)", who, err)
		}
	}
	title, high := "Widget jams hard", "high"
	if err := p.EditIssue(ctx, issue.Key, jira.IssueEdit{Title: &title, Priority: &high, AccountID: &acc, AddLabels: []string{"p1"}}); err != nil {
		t.Fatalf("edit: %v", err)
	}
	got, err := p.GetIssue(ctx, issue.Key)
	if err != nil || got.Title != title || got.Priority != "High" || got.AccountID != "acc-ada" || len(got.Labels) != 3 {
		t.Errorf("after the edit = %+v, %v", got, err)
	}
	unassign, odd := "", "critical"
	if err := p.EditIssue(ctx, issue.Key, jira.IssueEdit{AccountID: &unassign}); err != nil {
		t.Fatalf("unassign: %v", err)
	}
	if got, _ := p.GetIssue(ctx, issue.Key); got.AccountID != "" {
		t.Errorf("after unassigning: %q", got.AccountID)
	}
	before := s.EditRequests()
	if err := p.EditIssue(ctx, issue.Key, jira.IssueEdit{Priority: &odd}); !errors.Is(err, jira.ErrInvalid) || s.EditRequests() != before {
		t.Errorf("an unmapped priority: %v; want ErrInvalid and nothing sent", err)
	}
}
