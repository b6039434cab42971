package github_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestPriorityAndAssigneeAreNotHeld: a GitHub issue holds no ticketd
// priority or assignee (tracker.Backend.HoldsPriorityAndAssignee), so a
// request naming either is refused as Jira refuses a priority it cannot
// map: tracker.ErrInvalid, nothing sent.
func TestPriorityAndAssigneeAreNotHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	tr := open(t, githubtest.Start(t, gh), "good")
	if b := backend(""); b.HoldsPriorityAndAssignee() || b.PriorityName("urgent") != "" {
		t.Fatalf("a github backend holds a priority and assignee, or names %q", b.PriorityName("urgent"))
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, tracker.ErrInvalid) || !errors.Is(err, tracker.ErrNotSent) {
			t.Errorf("%s: %v; want ErrInvalid, not sent", what, err)
		}
	}
	_, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "Widget jams", Body: "marker", Labels: []string{tracker.Label}, Priority: "urgent"})
	refused("a create with a priority", err)
	urgent, who := "urgent", "octocat"
	_, err = tr.EditIssue(ctx, "1", tracker.IssueEdit{Priority: &urgent})
	refused("an edit of the priority", err)
	_, err = tr.EditIssue(ctx, "1", tracker.IssueEdit{Assignee: &who})
	refused("an edit of the assignee", err)
	_, err = tr.Account(ctx, "ada@acme.example")
	refused("an account", err)
	if n, m := gh.CreateRequests(), gh.EditRequests(); n != 0 || m != 0 {
		t.Errorf("creates %d, edits %d sent; want none", n, m)
	}
}
