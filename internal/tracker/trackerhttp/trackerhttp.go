// Package trackerhttp is the HTTP boundary every tracker adapter
// (internal/tracker/github, internal/tracker/jira) crosses, whatever the
// tracker's API: transports that dial only what the SSRF guard admits, a
// client bound to one tracker host and its credential that follows no
// redirect and bounds every answer, the per-host cap and breaker all
// tenants share, and ticketd's own words for a request that failed, with
// what the failure tells of the host (docs/trackers.md#the-boundary-credentials-and-endpoints).
// Reading an answer is the adapter's: which statuses mean what is the
// tracker's API.
package trackerhttp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Bounds on what a tracker can make ticketd hold, and the defaults of
// Bounds.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultMaxAnswer = 4 << 20 // one answer's body
	// MaxHeaderBytes bounds one answer's headers.
	MaxHeaderBytes = 64 << 10
	// MaxPages bounds one list.
	MaxPages = 100
	// DefaultHostConcurrency: a tracker asks for requests one credential
	// at a time, and every tenant of a replica may share one host.
	DefaultHostConcurrency = 16
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 30 * time.Second
)

// The failures of the boundary itself, as a tracker request meets them.
var (
	ErrRedirect     = errors.New("the tracker answered with a redirect, which is not followed")
	ErrOtherHost    = errors.New("a request to another host than the project's tracker")
	ErrTooLarge     = errors.New("the answer is larger than ticketd reads")
	ErrTooManyPages = fmt.Errorf("the list has more than %d pages", MaxPages)
)

// Options tune an adapter (github.Options and jira.Options are this type).
// Zero values take the defaults.
type Options struct {
	// Timeout bounds one request, answer included (default DefaultTimeout).
	Timeout time.Duration
	// Credentials are the credentials the operator declared
	// (TICKETD_TRACKER_CREDENTIALS); a backend names one of them.
	Credentials tracker.Credentials
	// Getenv reads a credential's variable; it is called on every open,
	// so a rotated token is picked up. Without it no backend opens.
	Getenv func(string) string
	// Guard judges the tracker's URL and every connection
	// (TICKETD_TRACKER_HOSTS, TICKETD_TRACKER_ALLOW_PRIVATE; --dev admits
	// any host).
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

// Secret reads the token of the credential called name, which tenant
// must be allowed to use, from its variable now.
//
// Errors: tracker.ErrMisconfigured.
func (o Options) Secret(name, tenant string) (string, error) {
	cred, ok := o.Credentials.For(name, tenant)
	if !ok || o.Getenv == nil {
		return "", fmt.Errorf("%w: the project needs a credential the operator declared for its tenant (TICKETD_TRACKER_CREDENTIALS)", tracker.ErrMisconfigured)
	}
	secret := o.Getenv(cred.Env)
	if secret == "" {
		return "", fmt.Errorf("%w: credential %s: its environment variable is empty", tracker.ErrMisconfigured, cred.Name)
	}
	return secret, nil
}

// Boundary is what one adapter's trackers share: a pair of transports
// (https and plain http, so connections are reused) and the per-host
// bounds. Its methods are safe for concurrent use.
type Boundary struct {
	opts     Options
	rt       http.RoundTripper
	slots    *limits.Slots
	breakers *limits.Breakers
}

// New returns the boundary of opts, its defaults applied.
func New(opts Options) *Boundary {
	opts.Timeout = orDefault(opts.Timeout, DefaultTimeout)
	opts.MaxAnswer = orDefault(opts.MaxAnswer, DefaultMaxAnswer)
	opts.HostConcurrency = orDefault(opts.HostConcurrency, DefaultHostConcurrency)
	opts.BreakerFailures = orDefault(opts.BreakerFailures, DefaultBreakerFailures)
	opts.BreakerCoolDown = orDefault(opts.BreakerCoolDown, DefaultBreakerCoolDown)
	slots, _ := limits.NewSlots(math.MaxInt32, opts.HostConcurrency)                   // cannot fail: > 0
	breakers, _ := limits.NewBreakers(opts.BreakerFailures, opts.BreakerCoolDown, nil) // cannot fail: both > 0
	g := opts.Guard
	return &Boundary{opts: opts, rt: &guarded{https: transport(g.ForScheme("https")), http: transport(g.ForScheme("http"))},
		slots: slots, breakers: breakers}
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// Host is one tracker host reached with one credential.
type Host struct {
	client *http.Client
	key    string
	b      *Boundary
}

// Host returns the tracker at u's scheme and host, sending authorization
// (the whole Authorization header) with every request, to that host only.
func (b *Boundary) Host(u *url.URL, authorization string) *Host {
	client := &http.Client{
		Timeout:   b.opts.Timeout,
		Transport: &credentialed{base: b.rt, scheme: u.Scheme, host: u.Host, authz: authorization, max: b.opts.MaxAnswer},
		// A redirect is never followed: the credential and the request
		// belong to the project's host, and an answer that points
		// elsewhere is not the tracker's answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return ErrRedirect },
	}
	return &Host{client: client, key: HostKey(u), b: b}
}

// Client is the host's HTTP client, for the adapter's requests; each goes
// through Do.
func (h *Host) Client() *http.Client { return h.client }

// Do runs call, one request to the host, once one of the host's slots is
// free and its breaker lets it go, and gives the breaker call's verdict. A
// request that waited in vain or met an open breaker was not sent
// (tracker.ErrNotSent, *tracker.HostDownError); call's error is returned
// as it is.
func (h *Host) Do(ctx context.Context, what string, call func() (limits.Verdict, error)) error {
	// The breaker first: a host known to be down is refused at once, not
	// after a wait for one of the slots its hanging requests hold.
	done, wait, ok := h.b.breakers.Allow(h.key)
	if !ok {
		return fmt.Errorf("%s: %w", what, &tracker.HostDownError{Host: h.key, RetryAfter: wait})
	}
	release, err := h.b.slots.Acquire(ctx, h.key)
	if err != nil {
		done(limits.Unjudged)
		return fmt.Errorf("%s: %w: wait for one of the host's %d requests: %w", what, tracker.ErrNotSent, h.b.opts.HostConcurrency, err)
	}
	defer release()
	v, err := call()
	done(v)
	return err
}

// HostKey names u's host as the per-host cap and breaker count it: one
// name for every spelling the guard admits as the same host (any case, a
// trailing dot, the scheme's port written or not), so a project cannot
// get a cap and a breaker of its own by spelling the host differently.
func HostKey(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.ToLower(u.Hostname()), "."), port)
}

// Watch returns ctx traced so that wrote tells whether a request made
// with it reached the network: what decides between "not sent" and "may
// have acted".
func Watch(ctx context.Context) (_ context.Context, wrote func() bool) {
	var w atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteHeaders: func() { w.Store(true) }})
	return ctx, w.Load
}

// Failure names what went wrong with a request in ticketd's words (what
// the tracker said is not copied into last_error or history, where a
// tenant reads it), and what it tells of the host (its breaker's
// verdict): a timeout or a failed connection is a host not answering; a
// request the caller gave up, the guard refused or that named another
// host never reached it, so says nothing of it; a redirect or an answer
// too large was an answer.
func Failure(err error) (limits.Verdict, string) {
	var ne net.Error
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	switch {
	case errors.Is(err, ssrf.ErrRefused):
		return limits.Unjudged, ssrf.ErrRefused.Error()
	case errors.Is(err, ErrOtherHost):
		return limits.Unjudged, err.Error()
	case errors.Is(err, ErrRedirect), errors.Is(err, ErrTooLarge):
		return limits.Answered, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return limits.Unanswered, "timeout"
	case errors.Is(err, context.Canceled):
		return limits.Unjudged, "canceled"
	}
	return limits.Unanswered, "connection failed"
}
