package jira

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

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
	// maxPages bounds one list: 100 pages of pageSize.
	maxPages = 100
	pageSize = 100
)

// The defaults of the per-host bounds (Options), the GitHub adapter's.
const (
	DefaultHostConcurrency = 16
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 30 * time.Second
)

// Options tune the adapter, as internal/tracker/github's do. Zero values
// take the defaults.
type Options struct {
	// Timeout bounds one request, answer included (default 10s).
	Timeout time.Duration
	// Credentials are the credentials the operator declared
	// (TICKETD_TRACKER_CREDENTIALS); a backend names one of them.
	Credentials tracker.Credentials
	// Getenv reads a credential's variable on every Open, so a rotated
	// token is picked up. Without it no backend opens.
	Getenv func(string) string
	// Guard judges the site and every connection (TICKETD_TRACKER_HOSTS,
	// TICKETD_TRACKER_ALLOW_PRIVATE; --dev admits any host).
	Guard ssrf.Guard
	// MaxAnswer bounds one answer's body (default DefaultMaxAnswer).
	MaxAnswer int64
	// HostConcurrency bounds the requests in flight to one host, all
	// tenants together; BreakerFailures unanswered requests in a row open
	// the host's breaker for BreakerCoolDown.
	HostConcurrency int
	BreakerFailures int
	BreakerCoolDown time.Duration
}

// Opener returns the opener of Jira backends. Its projects share one pair
// of transports (https and plain http) and one set of per-host bounds.
func Opener(opts Options) func(Config) (*Project, error) {
	opts.Timeout = cmpOr(opts.Timeout, 10*time.Second)
	opts.MaxAnswer = cmpOr(opts.MaxAnswer, DefaultMaxAnswer)
	opts.HostConcurrency = cmpOr(opts.HostConcurrency, DefaultHostConcurrency)
	opts.BreakerFailures = cmpOr(opts.BreakerFailures, DefaultBreakerFailures)
	opts.BreakerCoolDown = cmpOr(opts.BreakerCoolDown, DefaultBreakerCoolDown)
	rt := &guarded{https: transport(opts.Guard.ForScheme("https")), http: transport(opts.Guard.ForScheme("http"))}
	slots, _ := limits.NewSlots(math.MaxInt32, opts.HostConcurrency)                   // cannot fail: > 0
	breakers, _ := limits.NewBreakers(opts.BreakerFailures, opts.BreakerCoolDown, nil) // cannot fail: both > 0
	h := &hosts{slots: slots, share: opts.HostConcurrency, breakers: breakers}
	return func(c Config) (*Project, error) { return open(c, opts, rt, h) }
}

// cmpOr is v, or def when v is not positive.
func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Open returns the project of c, reading its credential now.
//
// Errors: tracker.ErrMisconfigured.
func Open(c Config, opts Options) (*Project, error) { return Opener(opts)(c) }

func open(c Config, opts Options, rt http.RoundTripper, h *hosts) (*Project, error) {
	c = c.WithDefaults()
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", tracker.ErrMisconfigured, err)
	}
	cred, ok := opts.Credentials.For(c.Credential, c.Tenant)
	if !ok || opts.Getenv == nil {
		return nil, fmt.Errorf("%w: the project needs a credential the operator declared for its tenant (TICKETD_TRACKER_CREDENTIALS)", tracker.ErrMisconfigured)
	}
	secret := opts.Getenv(cred.Env)
	if secret == "" {
		return nil, fmt.Errorf("%w: credential %s: its environment variable is empty", tracker.ErrMisconfigured, cred.Name)
	}
	u, _ := url.Parse(c.Site) // Check parsed it
	if err := opts.Guard.Check(u); err != nil {
		return nil, fmt.Errorf("%w: site: %w", tracker.ErrMisconfigured, err)
	}
	u.Path = ""
	hc := &http.Client{
		Timeout:   opts.Timeout,
		Transport: &credentialed{base: rt, scheme: u.Scheme, host: u.Host, authz: authorization(secret), max: opts.MaxAnswer},
		// A redirect is never followed: the credential and the request
		// belong to the project's site, and an answer that points
		// elsewhere is not the tracker's answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
	return &Project{hc: hc, site: u, cfg: c, hosts: h, host: hostKey(u)}, nil
}

// hostKey names u's host as the per-host cap and breaker count it, one
// name for every spelling of one host (as the GitHub adapter's does).
func hostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port)
}

// Project is one Jira project reached with one credential. Its methods are
// safe for concurrent use.
type Project struct {
	hc    *http.Client
	site  *url.URL // scheme and host: every request's, and every built URL's
	cfg   Config   // with its defaults
	hosts *hosts
	host  string // the site's host:port, the key of its cap and breaker
}

// Config is the backend the project was opened with, defaults applied; its
// maps are the caller's to change.
func (p *Project) Config() Config {
	c := p.cfg
	c.StatusMap, c.PriorityMap = maps.Clone(c.StatusMap), maps.Clone(c.PriorityMap)
	return c
}

// hosts bounds the requests to each tracker host, all tenants together.
type hosts struct {
	slots    *limits.Slots
	share    int
	breakers *limits.Breakers
}

// call sends one request to the project's site once one of the host's
// slots is free and its breaker lets it go, and decodes a 2xx answer into
// out (nil: the answer is not read). body, if not nil, is sent as JSON.
func (p *Project) call(ctx context.Context, what, method, path string, query url.Values, body, out any) error {
	// The breaker first: a host known to be down is refused at once, not
	// after a wait for one of the slots its hanging requests hold.
	done, wait, ok := p.hosts.breakers.Allow(p.host)
	if !ok {
		return fmt.Errorf("%s: %w", what, &tracker.HostDownError{Host: p.host, RetryAfter: wait})
	}
	release, err := p.hosts.slots.Acquire(ctx, p.host)
	if err != nil {
		done(limits.Unjudged)
		return fmt.Errorf("%s: %w: wait for one of the host's %d requests: %w", what, tracker.ErrNotSent, p.hosts.share, err)
	}
	defer release()
	v, err := p.send(ctx, method, path, query, body, out)
	done(v)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// send makes the request and classifies what came of it: whether it
// reached the network decides between "not sent" and "may have acted";
// the verdict says what the answer tells of the host, for its breaker. The
// texts are ticketd's own: what the tracker said is not copied into
// last_error or history, where a tenant reads it.
func (p *Project) send(ctx context.Context, method, path string, query url.Values, body, out any) (limits.Verdict, error) {
	var payload io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return limits.Unjudged, fmt.Errorf("%w: %w", tracker.ErrNotSent, err)
		}
		payload = bytes.NewReader(b)
	}
	u := p.site.JoinPath(path)
	u.RawQuery = query.Encode()
	var wrote atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { wrote.Store(true) }})
	req, err := http.NewRequestWithContext(ctx, method, u.String(), payload)
	if err != nil {
		return limits.Unjudged, fmt.Errorf("%w: %w", tracker.ErrNotSent, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		v, f := failure(err)
		if !wrote.Load() {
			return v, fmt.Errorf("%w: %s", tracker.ErrNotSent, f)
		}
		return v, errors.New(f)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, resp.Body) // lets the connection be reused; bounded
		_ = resp.Body.Close()
	}()
	switch s := resp.StatusCode; {
	case s == http.StatusTooManyRequests:
		return limits.Answered, &tracker.RateLimitError{RetryAfter: RetryAfter(resp.Header.Get("Retry-After"), time.Now()), Message: "too many requests"}
	case s >= 400 && s < 500:
		return limits.Answered, fmt.Errorf("%w: the tracker answered %d", tracker.ErrRejected, s)
	case s >= 500:
		return limits.Unanswered, fmt.Errorf("the tracker answered %d", s)
	case s >= 300 || s < 200:
		return limits.Answered, fmt.Errorf("the tracker answered %d", s)
	}
	if out == nil {
		return limits.Answered, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syntax) || errors.As(err, &typ) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return limits.Answered, errors.New("the tracker's answer is not the JSON ticketd expects")
		}
		v, f := failure(err) // the answer stopped coming: a timeout, a cut connection, too large
		return v, errors.New(f)
	}
	return limits.Answered, nil
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

// The bounds of a rate limit's wait: Jira Cloud asks for seconds to
// minutes; a wait outside these is a tracker's mistake or a hostile one.
const (
	minRetryAfter     = time.Second
	maxRetryAfter     = time.Hour
	defaultRetryAfter = time.Minute
)

// RetryAfter reads a Retry-After header, seconds or an HTTP date, as a
// wait between one second and an hour; without a readable one, a minute.
func RetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return defaultRetryAfter
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		d = maxRetryAfter
		if n < uint64(maxRetryAfter/time.Second) {
			d = time.Duration(n) * time.Second
		}
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	} else {
		return defaultRetryAfter
	}
	return min(max(d, minRetryAfter), maxRetryAfter)
}
