// Package github is the GitHub Issues adapter of internal/tracker, over
// google/go-github. It classifies every answer for the caller that has to
// decide whether an issue may have been created: not sent, rate limited,
// rejected, or possibly acted on. It reaches only the host its project
// names, through the SSRF guard, with the operator's credential
// (docs/trackers.md).
package github

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Bounds on what a tracker can make ticketd hold.
const (
	// DefaultMaxAnswer bounds one answer's body.
	DefaultMaxAnswer = 4 << 20
	// maxHeaderBytes bounds one answer's headers.
	maxHeaderBytes = 64 << 10
	// maxPages bounds one list: 100 pages of 100.
	maxPages = 100
)

// Options tune the adapter. Zero values take the defaults.
type Options struct {
	// Timeout bounds one request, answer included (default 10s).
	Timeout time.Duration
	// Credentials are the tokens the operator declared
	// (TICKETD_TRACKER_CREDENTIALS); a backend names one of them.
	Credentials tracker.Credentials
	// Getenv reads a credential's variable; it is called on every Open,
	// so a rotated token is picked up. Without it no backend opens.
	Getenv func(string) string
	// Guard judges the API URL and every connection (TICKETD_TRACKER_HOSTS,
	// TICKETD_TRACKER_ALLOW_PRIVATE; --dev admits any host).
	Guard ssrf.Guard
	// MaxAnswer bounds one answer's body (default DefaultMaxAnswer).
	MaxAnswer int64
	// HostConcurrency bounds the requests in flight to one host, all
	// tenants together (default DefaultHostConcurrency).
	HostConcurrency int
	// BreakerFailures is how many requests in a row a host may leave
	// unanswered before its breaker opens (default DefaultBreakerFailures);
	// BreakerCoolDown how long it stays open before one probe may go
	// (default DefaultBreakerCoolDown).
	BreakerFailures int
	BreakerCoolDown time.Duration
}

// Opener returns a tracker.Opener for GitHub backends. Its trackers share
// one pair of transports (https and plain http), so connections are reused.
func Opener(opts Options) tracker.Opener {
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxAnswer <= 0 {
		opts.MaxAnswer = DefaultMaxAnswer
	}
	if opts.HostConcurrency <= 0 {
		opts.HostConcurrency = DefaultHostConcurrency
	}
	if opts.BreakerFailures <= 0 {
		opts.BreakerFailures = DefaultBreakerFailures
	}
	if opts.BreakerCoolDown <= 0 {
		opts.BreakerCoolDown = DefaultBreakerCoolDown
	}
	rt := &guarded{https: transport(opts.Guard.ForScheme("https")), http: transport(opts.Guard.ForScheme("http"))}
	h := newHosts(opts)
	return func(b tracker.Backend) (tracker.Tracker, error) { return open(b, opts, rt, h) }
}

// Open returns the tracker of b, reading its credential's token now.
//
// Errors: tracker.ErrMisconfigured.
func Open(b tracker.Backend, opts Options) (tracker.Tracker, error) {
	return Opener(opts)(b)
}

func open(b tracker.Backend, opts Options, rt http.RoundTripper, h *hosts) (tracker.Tracker, error) {
	if b.Kind != tracker.KindGitHub {
		return nil, fmt.Errorf("%w: backend kind %q is not %q", tracker.ErrMisconfigured, b.Kind, tracker.KindGitHub)
	}
	owner, repo, ok := strings.Cut(b.Repository, "/")
	if !ok || owner == "" || repo == "" {
		return nil, fmt.Errorf("%w: repository %q is not owner/name", tracker.ErrMisconfigured, b.Repository)
	}
	cred, ok := opts.Credentials.For(b.Credential, b.Tenant)
	if !ok || opts.Getenv == nil {
		return nil, fmt.Errorf("%w: the project needs a credential the operator declared for its tenant (TICKETD_TRACKER_CREDENTIALS)", tracker.ErrMisconfigured)
	}
	token := opts.Getenv(cred.Env)
	if token == "" {
		return nil, fmt.Errorf("%w: credential %s: its environment variable is empty", tracker.ErrMisconfigured, cred.Name)
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
	hc := &http.Client{
		Timeout:   opts.Timeout,
		Transport: &credentialed{base: rt, scheme: u.Scheme, host: u.Host, token: token, max: opts.MaxAnswer},
		// A redirect is never followed: the token and the request belong
		// to the project's host, and an answer that points elsewhere is
		// not the tracker's answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
	c := gh.NewClient(hc)
	c.BaseURL = u
	return &repoTracker{c: c, owner: owner, repo: repo, web: webRoot(u), hosts: h, host: hostKey(u), backend: b}, nil
}

// hostKey names u's host as the per-host cap and breaker count it: one
// name for every spelling the guard admits as the same host (any case, a
// trailing dot, the scheme's port written or not), so a project cannot
// get a cap and a breaker of its own by spelling the host differently.
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port)
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
	web         string // https://github.com: built URLs, never the tracker's html_url
	hosts       *hosts
	host        string // the API's host[:port], the key of its cap and breaker
	backend     tracker.Backend
}

// classify runs call, classifies its error and says what the answer tells
// of the host (for its breaker); wrote tells whether the request reached
// the network, which decides between "not sent" and "maybe acted".
func classify(ctx context.Context, what string, call func(ctx context.Context) (*gh.Response, error)) (limits.Verdict, error) {
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteHeaders: func() { wrote.Store(true) },
	})
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
	case !wrote.Load():
		v, f := failure(err)
		return v, fmt.Errorf("%s: %w: %s", what, tracker.ErrNotSent, f)
	case errors.As(err, &answered) && answered.Response != nil && answered.Response.StatusCode == http.StatusTooManyRequests:
		return limits.Answered, fmt.Errorf("%s: %w", what, &tracker.RateLimitError{RetryAfter: retryAfter(answered.Response), Message: "too many requests"})
	case resp != nil && resp.StatusCode >= 400 && resp.StatusCode < 500:
		return limits.Answered, fmt.Errorf("%s: %w: the tracker answered %d", what, tracker.ErrRejected, resp.StatusCode)
	case resp != nil && resp.StatusCode >= 300 && !errors.Is(err, errTooLarge) && !errors.Is(err, errRedirect):
		v := limits.Answered
		if resp.StatusCode >= 500 {
			v = limits.Unanswered
		}
		return v, fmt.Errorf("%s: the tracker answered %d", what, resp.StatusCode)
	}
	v, f := failure(err)
	return v, fmt.Errorf("%s: %s", what, f)
}

// failure names what went wrong with a request in ticketd's words, and
// what it tells of the host (its breaker's verdict): a timeout or a failed
// connection is a host not answering; a request the caller gave up, the
// guard refused or that named another host never reached it, so says
// nothing of it; a redirect or an answer too large was an answer.
func failure(err error) (limits.Verdict, string) {
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, ssrf.ErrRefused):
		return limits.Unjudged, ssrf.ErrRefused.Error()
	case errors.Is(err, errOtherHost):
		return limits.Unjudged, err.Error()
	case errors.Is(err, errRedirect), errors.Is(err, errTooLarge):
		return limits.Answered, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return limits.Unanswered, "timeout"
	case errors.Is(err, context.Canceled):
		return limits.Unjudged, "canceled"
	}
	return limits.Unanswered, "connection failed"
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
	return nil, fmt.Errorf("list issues: %w", errTooManyPgs)
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
