// Package github is the GitHub Issues adapter of internal/tracker, over
// google/go-github. It classifies every answer for the caller that has to
// decide whether an issue may have been created: not sent, rate limited,
// rejected, or possibly acted on. It reaches only the host its project
// names, through the SSRF guard, with the operator's credential, over the
// boundary every adapter shares (internal/tracker/trackerhttp;
// docs/trackers.md).
package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// Options tune the adapter: trackerhttp's, which the Jira adapter takes too.
type Options = trackerhttp.Options

// maxPages bounds one list: trackerhttp.MaxPages pages of 100.
const maxPages = trackerhttp.MaxPages

// Opener returns a tracker.Opener for GitHub backends. Its trackers share
// one trackerhttp.Boundary: one pair of transports, so connections are
// reused, and one set of per-host bounds.
func Opener(opts Options) tracker.Opener {
	bd := trackerhttp.New(opts)
	return func(b tracker.Backend) (tracker.Tracker, error) { return open(b, opts, bd) }
}

// Open returns the tracker of b, reading its credential's token now.
//
// Errors: tracker.ErrMisconfigured.
func Open(b tracker.Backend, opts Options) (tracker.Tracker, error) {
	return Opener(opts)(b)
}

func open(b tracker.Backend, opts Options, bd *trackerhttp.Boundary) (tracker.Tracker, error) {
	if b.Kind != tracker.KindGitHub {
		return nil, fmt.Errorf("%w: backend kind %q is not %q", tracker.ErrMisconfigured, b.Kind, tracker.KindGitHub)
	}
	owner, repo, ok := strings.Cut(b.Repository, "/")
	if !ok || owner == "" || repo == "" {
		return nil, fmt.Errorf("%w: repository %q is not owner/name", tracker.ErrMisconfigured, b.Repository)
	}
	token, err := opts.Secret(b.Credential, b.Tenant)
	if err != nil {
		return nil, err
	}
	// api_url is the API root as given (GitHub Enterprise:
	// https://HOST/api/v3/), not a host to which /api/v3/ is appended,
	// so a proxy or a test server can stand in at any path.
	u, err := url.Parse(cmp.Or(b.APIURL, tracker.GitHubAPI))
	if err != nil {
		return nil, fmt.Errorf("%w: api_url is not a URL", tracker.ErrMisconfigured)
	}
	if err := opts.Guard.Check(u); err != nil {
		return nil, fmt.Errorf("%w: api_url: %w", tracker.ErrMisconfigured, err)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	host := bd.Host(u, "Bearer "+token)
	c := gh.NewClient(host.Client())
	c.BaseURL = u
	return &repoTracker{c: c, owner: owner, repo: repo, web: webRoot(u), host: host, backend: b}, nil
}

// webRoot is where a person reads the repository's issues: the API host
// without its leading "api." label (api.github.com → github.com), or the
// API's own host for GitHub Enterprise (https://HOST/api/v3/).
func webRoot(api *url.URL) string {
	host := api.Host
	if !strings.HasPrefix(api.Path, "/api/v3/") {
		host = strings.TrimPrefix(host, "api.")
	}
	return "https://" + host
}

type repoTracker struct {
	c           *gh.Client
	owner, repo string
	web         string            // https://github.com: built URLs, never the tracker's html_url
	host        *trackerhttp.Host // the API's host, its cap and breaker
	backend     tracker.Backend
}

// do sends one request through the host's cap and breaker
// (trackerhttp.Host.Do), classified.
func (t *repoTracker) do(ctx context.Context, what string, call func(ctx context.Context) (*gh.Response, error)) error {
	return t.host.Do(ctx, what, func() (limits.Verdict, error) { return classify(ctx, what, call) })
}

// classify runs call, classifies its error and says what the answer tells
// of the host (for its breaker); wrote tells whether the request reached
// the network, which decides between "not sent" and "maybe acted".
func classify(ctx context.Context, what string, call func(ctx context.Context) (*gh.Response, error)) (limits.Verdict, error) {
	ctx, wrote := trackerhttp.Watch(ctx)
	resp, err := call(ctx)
	if err == nil {
		return limits.Answered, nil
	}
	// The texts are ticketd's own: what the tracker said is not copied
	// into last_error or history, where a tenant reads it.
	var abuse *gh.AbuseRateLimitError
	var primary *gh.RateLimitError
	var answered *gh.ErrorResponse
	switch {
	case errors.As(err, &abuse):
		wait := time.Minute
		if abuse.RetryAfter != nil {
			wait = *abuse.RetryAfter
		}
		return limits.Answered, fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: wait, Message: "secondary rate limit"})
	case errors.As(err, &primary):
		return limits.Answered, fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: max(time.Until(primary.Rate.Reset.Time), time.Second), Message: "rate limit exhausted"})
	case !wrote():
		v, f := trackerhttp.Failure(err)
		return v, fmt.Errorf("%s: %w: %s", what, tracker.ErrNotSent, f)
	case errors.As(err, &answered) && answered.Response != nil && answered.Response.StatusCode == http.StatusTooManyRequests:
		return limits.Answered, fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: retryAfter(answered.Response), Message: "too many requests"})
	case resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500:
		return limits.Answered, fmt.Errorf("%s: %w: the tracker answered %d", what, tracker.ErrRejected, resp.StatusCode)
	case resp != nil && resp.StatusCode >= 300 && !errors.Is(err, trackerhttp.ErrTooLarge) && !errors.Is(err, trackerhttp.ErrRedirect):
		v := limits.Answered
		if resp.StatusCode >= 500 {
			v = limits.Unanswered
		}
		return v, fmt.Errorf("%s: the tracker answered %d", what, resp.StatusCode)
	}
	v, f := trackerhttp.Failure(err)
	return v, fmt.Errorf("%s: %s", what, f)
}

func retryAfter(r *http.Response) time.Duration {
	if d, err := time.ParseDuration(r.Header.Get("Retry-After") + "s"); err == nil && d > 0 {
		return d
	}
	return time.Minute
}

func (t *repoTracker) toIssue(i *gh.Issue) tracker.Issue {
	labels := make([]string, 0, len(i.Labels))
	for _, l := range i.Labels {
		labels = append(labels, l.GetName())
	}
	return tracker.Issue{
		Ref: strconv.Itoa(i.GetNumber()), URL: t.issueURL(int64(i.GetNumber())), Title: i.GetTitle(), Body: i.GetBody(),
		State: i.GetState(), Labels: labels, CreatedAt: i.GetCreatedAt().UTC(), UpdatedAt: i.GetUpdatedAt().UTC(),
	}
}

func (t *repoTracker) CreateIssue(ctx context.Context, in tracker.NewIssue) (tracker.Issue, error) {
	if in.Priority != "" {
		return tracker.Issue{}, errNotHeld("create issue", "priority")
	}
	var got *gh.Issue
	err := t.do(ctx, "create issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Create(ctx, t.owner, t.repo, &gh.IssueRequest{Title: &in.Title, Body: &in.Body, Labels: &in.Labels})
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return t.toIssue(got), nil
}

func (t *repoTracker) GetIssue(ctx context.Context, ref string) (tracker.Issue, error) {
	number, err := issueNumber(ref)
	if err != nil {
		return tracker.Issue{}, err
	}
	var got *gh.Issue
	err = t.do(ctx, "get issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Get(ctx, t.owner, t.repo, number)
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return t.toIssue(got), nil
}

// listLabelled lists the issues labelled label updated at or after since,
// open and closed, every page.
func (t *repoTracker) listLabelled(ctx context.Context, label string, since time.Time) ([]tracker.Issue, error) {
	opts := &gh.IssueListByRepoOptions{
		State: "all", Labels: []string{label}, Since: since, Sort: "created", Direction: "asc",
		ListOptions: gh.ListOptions{PerPage: 100},
	}
	var out []tracker.Issue
	for range maxPages {
		var page []*gh.Issue
		var next int
		err := t.do(ctx, "list issues", func(ctx context.Context) (r *gh.Response, err error) {
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
				out = append(out, t.toIssue(i))
			}
		}
		if next == 0 {
			return out, nil
		}
		opts.ListOptions.Page = next
	}
	return nil, fmt.Errorf("list issues: %w", trackerhttp.ErrTooManyPages)
}

func (t *repoTracker) EditIssue(ctx context.Context, ref string, edit tracker.IssueEdit) (tracker.Issue, error) {
	switch {
	case edit.Priority != nil:
		return tracker.Issue{}, errNotHeld("edit issue", "priority")
	case edit.Assignee != nil:
		return tracker.Issue{}, errNotHeld("edit issue", "assignee")
	}
	number, err := issueNumber(ref)
	if err != nil {
		return tracker.Issue{}, err
	}
	req := &gh.IssueRequest{Title: edit.Title, Body: edit.Body, Labels: edit.Labels}
	if edit.Status != nil {
		state := t.backend.StatusName(*edit.Status)
		req.State = &state
	}
	var got *gh.Issue
	err = t.do(ctx, "edit issue", func(ctx context.Context) (r *gh.Response, err error) {
		got, r, err = t.c.Issues.Edit(ctx, t.owner, t.repo, number, req)
		return r, err
	})
	if err != nil {
		return tracker.Issue{}, err
	}
	return t.toIssue(got), nil
}

// issueURL is the page of issue n, built from the API URL and the
// repository: the tracker's html_url could point anywhere (javascript:…).
func (t *repoTracker) issueURL(n int64) string {
	return fmt.Sprintf("%s/%s/%s/issues/%d", t.web, url.PathEscape(t.owner), url.PathEscape(t.repo), n)
}
