package github_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// options reach a loopback fake as --dev does, with one credential "gh"
// in the variable GH_TOKEN holding token.
func options(token string) github.Options {
	return github.Options{Timeout: 500 * time.Millisecond, Credentials: tracker.Credentials{{Name: "gh", Env: "GH_TOKEN"}},
		Getenv: func(name string) string {
			if name == "GH_TOKEN" {
				return token
			}
			return ""
		},
		Guard: ssrf.Guard{AllowPrivate: true}}
}

func backend(apiURL string) tracker.Backend {
	return tracker.Backend{Kind: tracker.KindGitHub, Repository: "acme/widgets", APIURL: apiURL, Credential: "gh", Tenant: "acme"}
}

func open(t *testing.T, apiURL, token string) tracker.Tracker {
	t.Helper()
	tr, err := github.Open(backend(apiURL), options(token))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestAnswersAreClassified pins what each answer proves, which is what the
// reconciliation decides with: only a definite refusal is a clean failure,
// only a request that never left or a rate limit is "nothing happened", and
// everything else may have created the issue.
func TestAnswersAreClassified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	apiURL := githubtest.Start(t, gh)
	in := tracker.NewIssue{Title: "Widget jams", Body: "marker", Labels: []string{tracker.Label}}

	created, err := open(t, apiURL, "good").CreateIssue(ctx, in)
	if err != nil || created.Ref != "1" || !strings.HasSuffix(created.URL, "/acme/widgets/issues/1") {
		t.Fatalf("create = %+v, %v", created, err)
	}
	if _, err := open(t, apiURL, "bad").CreateIssue(ctx, in); !errors.Is(err, tracker.ErrRejected) {
		t.Errorf("401: %v; want ErrRejected", err)
	}
	for _, f := range []githubtest.Fault{githubtest.SecondaryRateLimit, githubtest.TooManyRequests} {
		gh.FailCreates(f)
		var limited *tracker.RateLimitError
		if _, err := open(t, apiURL, "good").CreateIssue(ctx, in); !errors.As(err, &limited) || limited.RetryAfter != time.Second {
			t.Errorf("fault %d: %v; want a rate limit with Retry-After 1s", f, err)
		}
	}
	for _, f := range []githubtest.Fault{githubtest.DropAfterCreate, githubtest.BadGatewayAfterCreate, githubtest.SlowCreate} {
		gh.FailCreates(f)
		_, err := open(t, apiURL, "good").CreateIssue(ctx, in)
		var limited *tracker.RateLimitError
		if err == nil || errors.Is(err, tracker.ErrRejected) || errors.Is(err, tracker.ErrNotSent) || errors.As(err, &limited) {
			t.Errorf("fault %d: %v; want an error that leaves the outcome open", f, err)
		}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	_ = ln.Close()
	if _, err := open(t, closed, "good").CreateIssue(ctx, in); !errors.Is(err, tracker.ErrNotSent) {
		t.Errorf("nobody listening: %v; want ErrNotSent", err)
	}
	if _, err := github.Open(backend(apiURL), options("")); !errors.Is(err, tracker.ErrMisconfigured) {
		t.Errorf("empty token variable: %v; want ErrMisconfigured", err)
	}
}

// TestListFollowsPagesAndFilters finds every marked issue with the label
// across pages, closed ones included, none without the label or the
// marker, and none before since.
func TestListFollowsPagesAndFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	tr := open(t, githubtest.Start(t, gh), "good")
	mark := tracker.Mark{Tenant: "acme", OperationID: "op-1"}
	for i := range 130 {
		labels := []string{tracker.Label}
		if i%2 == 1 {
			labels = []string{"other"}
		}
		if _, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "n", Body: "x\n\n" + mark.Text(), Labels: labels, Mark: mark}); err != nil {
			t.Fatal(err)
		}
	}
	other := tracker.Mark{Tenant: "acme", OperationID: "op-2"}
	if _, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "n", Body: other.Text(), Labels: []string{tracker.Label}, Mark: other}); err != nil {
		t.Fatal(err)
	}
	closed := "closed"
	if _, err := tr.EditIssue(ctx, "1", tracker.IssueEdit{Status: &closed}); err != nil {
		t.Fatal(err)
	}
	got, err := tr.FindMarked(ctx, mark, time.Now().Add(-time.Minute))
	if err != nil || len(got) != 65 || got[0].Ref != "1" || got[0].State != "closed" {
		t.Fatalf("list = %d issues (first %+v), %v; want 65 oldest first, the closed one included", len(got), got[0], err)
	}
	if later, err := tr.FindMarked(ctx, mark, time.Now().Add(time.Minute)); err != nil || len(later) != 0 {
		t.Errorf("since the future = %d issues, %v; want none", len(later), err)
	}
	if _, err := tr.CreateComment(ctx, "3", "hello"); err != nil {
		t.Fatal(err)
	}
	if cs, err := tr.ListComments(ctx, "3", time.Now().Add(-time.Minute)); err != nil || len(cs) != 1 || cs[0].Body != "hello" {
		t.Errorf("comments = %+v, %v", cs, err)
	}
}

// TestCommentsAndEditsRoundTrip pins what reconciliation of comments and
// edits reads back through go-github: a comment's issue and marker body
// (by list and by ID), its deletion, and an edited issue's labels, state
// and updated_at.
func TestCommentsAndEditsRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	tr := open(t, githubtest.Start(t, gh), "good")
	issue, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "Widget jams", Body: "marker", Labels: []string{tracker.Label}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := tr.CreateComment(ctx, issue.Ref, "Seen. <!-- m -->")
	if err != nil || c.Issue != issue.Ref || !strings.Contains(c.URL, "#issuecomment-") {
		t.Fatalf("comment = %+v, %v", c, err)
	}
	listed, err := tr.ListComments(ctx, issue.Ref, issue.CreatedAt.Add(-time.Minute))
	if err != nil || len(listed) != 1 || listed[0].ID != c.ID || listed[0].Body != c.Body {
		t.Fatalf("list = %+v, %v", listed, err)
	}
	if got, err := tr.GetComment(ctx, issue.Ref, c.ID); err != nil || got.Issue != issue.Ref || got.Body != c.Body {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if err := tr.DeleteComment(ctx, issue.Ref, c.ID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := tr.GetComment(ctx, issue.Ref, c.ID); !errors.Is(err, tracker.ErrRejected) {
		t.Errorf("get of a deleted comment: %v; want a 404 (rejected)", err)
	}
	closed, labels := "closed", []string{tracker.Label, "p1"}
	edited, err := tr.EditIssue(ctx, issue.Ref, tracker.IssueEdit{Status: &closed, Labels: &labels})
	if err != nil || edited.State != "closed" || len(edited.Labels) != 2 || edited.Labels[1] != "p1" || edited.UpdatedAt.IsZero() {
		t.Fatalf("edit = %+v, %v", edited, err)
	}
	gh.FailEdits(githubtest.DropAfterCreate)
	reopen := "open"
	if _, err := tr.EditIssue(ctx, issue.Ref, tracker.IssueEdit{Status: &reopen}); err == nil || errors.Is(err, tracker.ErrRejected) || errors.Is(err, tracker.ErrNotSent) {
		t.Errorf("dropped edit: %v; want an error that leaves the outcome open", err)
	}
	if got, err := tr.GetIssue(ctx, issue.Ref); err != nil || got.State != "open" {
		t.Errorf("after the dropped edit: %+v, %v; want it applied", got, err)
	}
}
