package github

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// The comments on an issue: a comment is made with the operation's marker
// and reconciled against the issue's comments.

func (t *repoTracker) CreateComment(ctx context.Context, ref, body string) (tracker.Comment, error) {
	number, err := issueNumber(ref)
	if err != nil {
		return tracker.Comment{}, err
	}
	var got *gh.IssueComment
	err = t.do(ctx, "create comment", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.CreateComment(ctx, t.owner, t.repo, number, &gh.IssueComment{Body: &body})
		return r, err
	})
	if err != nil {
		return tracker.Comment{}, err
	}
	return t.toComment(got), nil
}

func (t *repoTracker) ListComments(ctx context.Context, ref string, since time.Time) ([]tracker.Comment, error) {
	number, err := issueNumber(ref)
	if err != nil {
		return nil, err
	}
	opts := &gh.IssueListCommentsOptions{Since: &since, ListOptions: gh.ListOptions{PerPage: 100}}
	var out []tracker.Comment
	for range maxPages {
		var page []*gh.IssueComment
		var next int
		err := t.do(ctx, "list comments", func(ctx context.Context) (r *gh.Response, err error) {
			page, r, err = t.c.Issues.ListComments(ctx, t.owner, t.repo, number, opts)
			if r != nil {
				next = r.NextPage
			}
			return r, err
		})
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, t.toComment(c))
		}
		if next == 0 {
			return out, nil
		}
		opts.Page = next
	}
	return nil, fmt.Errorf("list comments: %w", trackerhttp.ErrTooManyPages)
}

// GetComment reads the comment by its ID; GitHub names a comment by its
// ID alone, and the answer says which issue it is on.
func (t *repoTracker) GetComment(ctx context.Context, _, commentID string) (tracker.Comment, error) {
	id, err := commentNumber(commentID)
	if err != nil {
		return tracker.Comment{}, err
	}
	var got *gh.IssueComment
	err = t.do(ctx, "get comment", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.GetComment(ctx, t.owner, t.repo, id)
		return r, err
	})
	if err != nil {
		return tracker.Comment{}, err
	}
	return t.toComment(got), nil
}

func (t *repoTracker) DeleteComment(ctx context.Context, _, commentID string) error {
	id, err := commentNumber(commentID)
	if err != nil {
		return err
	}
	return t.do(ctx, "delete comment", func(ctx context.Context) (*gh.Response, error) {
		return t.c.Issues.DeleteComment(ctx, t.owner, t.repo, id)
	})
}

func (t *repoTracker) toComment(c *gh.IssueComment) tracker.Comment {
	// issue_url ends with the issue's number: …/repos/owner/name/issues/12.
	u := c.GetIssueURL()
	n, _ := strconv.ParseInt(u[strings.LastIndex(u, "/")+1:], 10, 64)
	return tracker.Comment{ID: strconv.FormatInt(c.GetID(), 10), Issue: strconv.FormatInt(n, 10), URL: fmt.Sprintf("%s#issuecomment-%d", t.issueURL(n), c.GetID()),
		Body: c.GetBody(), CreatedAt: c.GetCreatedAt().UTC()}
}
