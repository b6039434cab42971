// Package github is the GitHub Issues adapter of internal/tracker, over
// google/go-github. It classifies every answer for the caller that has to
// decide whether an issue may have been created: not sent, rate limited,
// rejected, or possibly acted on.
package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ticketd/ticketd/internal/tracker"
)

// Options tune the adapter. Zero values take the defaults.
type Options struct {
	// Timeout bounds one request, answer included (default 10s).
	Timeout time.Duration
	// Getenv reads the token's environment variable (default os.Getenv);
	// it is called on every Open, so a rotated token is picked up.
	Getenv func(string) string
	// Transport carries the requests (default http.DefaultTransport).
	Transport http.RoundTripper
}

// Opener returns a tracker.Opener for GitHub backends.
func Opener(opts Options) tracker.Opener {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	return func(b tracker.Backend) (tracker.Tracker, error) { return Open(b, opts) }
}

// Open returns the tracker of b, reading its token now.
//
// Errors: tracker.ErrMisconfigured.
func Open(b tracker.Backend, opts Options) (tracker.Tracker, error) {
	if b.Kind != tracker.KindGitHub {
		return nil, fmt.Errorf("%w: backend kind %q is not %q", tracker.ErrMisconfigured, b.Kind, tracker.KindGitHub)
	}
	owner, repo, ok := strings.Cut(b.Repository, "/")
	if !ok || owner == "" || repo == "" {
		return nil, fmt.Errorf("%w: repository %q is not owner/name", tracker.ErrMisconfigured, b.Repository)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	token := getenv(b.TokenEnv)
	if token == "" {
		return nil, fmt.Errorf("%w: environment variable %s (token_env) is empty", tracker.ErrMisconfigured, b.TokenEnv)
	}
	hc := &http.Client{Timeout: opts.Timeout, Transport: opts.Transport}
	c := gh.NewClient(hc).WithAuthToken(token)
	if b.APIURL != "" {
		// api_url is the API root as given (GitHub Enterprise:
		// https://HOST/api/v3/), not a host to which /api/v3/ is appended,
		// so a proxy or a test server can stand in at any path.
		u, err := url.Parse(b.APIURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("%w: api_url %q is not an http(s) URL", tracker.ErrMisconfigured, b.APIURL)
		}
		if !strings.HasSuffix(u.Path, "/") {
			u.Path += "/"
		}
		c.BaseURL = u
	}
	return &repoTracker{c: c, owner: owner, repo: repo}, nil
}

type repoTracker struct {
	c           *gh.Client
	owner, repo string
}

// do runs call and classifies its error; wrote tells whether the request
// reached the network, which decides between "not sent" and "maybe acted".
func do(ctx context.Context, what string, call func(ctx context.Context) (*gh.Response, error)) error {
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
	resp, err := call(ctx)
	if err == nil {
		return nil
	}
	var abuse *gh.AbuseRateLimitError
	var primary *gh.RateLimitError
	var answered *gh.ErrorResponse
	switch {
	case errors.As(err, &abuse):
		wait := time.Minute
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		return fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: wait, Message: abuse.Message})
	case errors.As(err, &primary):
		return fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: max(time.Until(primary.Rate.Reset.Time), time.Second), Message: primary.Message})
	case !wrote.Load():
		return fmt.Errorf("%s: %w: %v", what, tracker.ErrNotSent, err)
	case errors.As(err, &answered) && answered.Response != nil && answered.Response.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: retryAfter(answered.Response), Message: answered.Message})
	case resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500:
		return fmt.Errorf("%s: %w: %v", what, tracker.ErrRejected, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func retryAfter(r *http.Response) time.Duration {
	if d, err := time.ParseDuration(r.Header.Get("Retry-After") + "s"); err == nil && d > 0 {
		return d
	}
	return time.Minute
}

func toIssue(i *gh.Issue) tracker.Issue {
	labels := make([]string, 0, len(i.Labels))
	for _, l := range i.Labels {
		labels = append(labels, l.GetName())
	}
	return tracker.Issue{
		Number: int64(i.GetNumber()), URL: i.GetHTMLURL(), Title: i.GetTitle(), Body: i.GetBody(),
		State: i.GetState(), Labels: labels, CreatedAt: i.GetCreatedAt().UTC(), UpdatedAt: i.GetUpdatedAt().UTC(),
	}
}

func (t *repoTracker) CreateIssue(ctx context.Context, in tracker.NewIssue) (tracker.Issue, error) {
	var got *gh.Issue
	err := do(ctx, "create issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Create(ctx, t.owner, t.repo, &gh.IssueRequest{Title: &in.Title, Body: &in.Body, Labels: &in.Labels})
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return toIssue(got), nil
}

func (t *repoTracker) GetIssue(ctx context.Context, number int64) (tracker.Issue, error) {
	var got *gh.Issue
	err := do(ctx, "get issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Get(ctx, t.owner, t.repo, int(number))
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return toIssue(got), nil
}

func (t *repoTracker) ListLabelled(ctx context.Context, label string, since time.Time) ([]tracker.Issue, error) {
	opts := &gh.IssueListByRepoOptions{
		State: "all", Labels: []string{label}, Since: since, Sort: "created", Direction: "asc",
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	var out []tracker.Issue
	for {
		var page []*gh.Issue
		var next int
		err := do(ctx, "list issues", func(ctx context.Context) (r *gh.Response, err error) {
			page, r, err = t.c.Issues.ListByRepo(ctx, t.owner, t.repo, opts)
			if r != nil {
				next = r.NextPage
			}
			return r, err
		})
		if err != nil {
			return nil, err
		}
		for _, i := range page {
			if !i.IsPullRequest() {
				out = append(out, toIssue(i))
			}
		}
		if next == 0 {
			return out, nil
		}
		opts.ListOptions.Page = next
	}
}

func (t *repoTracker) EditIssue(ctx context.Context, number int64, edit tracker.IssueEdit) (tracker.Issue, error) {
	req := &gh.IssueRequest{Title: edit.Title, Body: edit.Body, State: edit.State, Labels: edit.Labels}
	var got *gh.Issue
	err := do(ctx, "edit issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Edit(ctx, t.owner, t.repo, int(number), req)
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return toIssue(got), nil
}

func (t *repoTracker) CreateComment(ctx context.Context, number int64, body string) (tracker.Comment, error) {
	var got *gh.IssueComment
	err := do(ctx, "create comment", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.CreateComment(ctx, t.owner, t.repo, int(number), &gh.IssueComment{Body: &body})
		return r, err
	})
	if err != nil {
		return tracker.Comment{}, err
	}
	return toComment(got), nil
}

func (t *repoTracker) ListComments(ctx context.Context, number int64, since time.Time) ([]tracker.Comment, error) {
	opts := &gh.IssueListCommentsOptions{Since: &since, ListOptions: gh.ListOptions{PerPage: 100}}
	var out []tracker.Comment
	for {
		var page []*gh.IssueComment
		var next int
		err := do(ctx, "list comments", func(ctx context.Context) (r *gh.Response, err error) {
			page, r, err = t.c.Issues.ListComments(ctx, t.owner, t.repo, int(number), opts)
			if r != nil {
				next = r.NextPage
			}
			return r, err
		})
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, toComment(c))
		}
		if next == 0 {
			return out, nil
		}
		opts.Page = next
	}
}

func (t *repoTracker) GetComment(ctx context.Context, commentID int64) (tracker.Comment, error) {
	var got *gh.IssueComment
	err := do(ctx, "get comment", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.GetComment(ctx, t.owner, t.repo, commentID)
		return r, err
	})
	if err != nil {
		return tracker.Comment{}, err
	}
	return toComment(got), nil
}

func (t *repoTracker) DeleteComment(ctx context.Context, commentID int64) error {
	return do(ctx, "delete comment", func(ctx context.Context) (*gh.Response, error) {
		return t.c.Issues.DeleteComment(ctx, t.owner, t.repo, commentID)
	})
}

func toComment(c *gh.IssueComment) tracker.Comment {
	// issue_url ends with the issue's number: …/repos/owner/name/issues/12.
	u := c.GetIssueURL()
	n, _ := strconv.ParseInt(u[strings.LastIndex(u, "/")+1:], 10, 64)
	return tracker.Comment{ID: c.GetID(), Issue: n, URL: c.GetHTMLURL(), Body: c.GetBody(), CreatedAt: c.GetCreatedAt().UTC()}
}
