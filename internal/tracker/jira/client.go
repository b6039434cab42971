package jira

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// Bounds on a list: trackerhttp.MaxPages pages of pageSize.
const (
	maxPages = trackerhttp.MaxPages
	pageSize = 100
)

// Options tune the adapter: trackerhttp's, which the GitHub adapter takes
// too, with the same defaults.
type Options = trackerhttp.Options

// Opener returns the opener of Jira backends. Its projects share one
// trackerhttp.Boundary: one pair of transports and one set of per-host
// bounds.
func Opener(opts Options) func(Config) (*Project, error) {
	bd := trackerhttp.New(opts)
	return func(c Config) (*Project, error) { return open(c, opts, bd) }
}

// Open returns the project of c, reading its credential now.
//
// Errors: tracker.ErrMisconfigured.
func Open(c Config, opts Options) (*Project, error) { return Opener(opts)(c) }

func open(c Config, opts Options, bd *trackerhttp.Boundary) (*Project, error) {
	c = c.WithDefaults()
	if err := c.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", tracker.ErrMisconfigured, err)
	}
	secret, err := opts.Secret(c.Credential, c.Tenant)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(c.Site) // Check parsed it
	if err := opts.Guard.Check(u); err != nil {
		return nil, fmt.Errorf("%w: site: %w", tracker.ErrMisconfigured, err)
	}
	u.Path = ""
	return &Project{host: bd.Host(u, authorization(secret)), site: u, cfg: c}, nil
}

// Project is one Jira project reached with one credential. Its methods are
// safe for concurrent use.
type Project struct {
	host *trackerhttp.Host // the site's client, cap and breaker
	site *url.URL          // scheme and host: every request's, and every built URL's
	cfg  Config            // with its defaults
}

// Config is the backend the project was opened with, defaults applied; its
// maps are the caller's to change.
func (p *Project) Config() Config {
	c := p.cfg
	c.StatusMap, c.PriorityMap = maps.Clone(c.StatusMap), maps.Clone(c.PriorityMap)
	return c
}

// call sends one request to the project's site through its cap and
// breaker (trackerhttp.Host.Do), and decodes a 2xx answer into out (nil:
// the answer is not read). body, if not nil, is sent as JSON.
func (p *Project) call(ctx context.Context, what, method, path string, query url.Values, body, out any) error {
	return p.host.Do(ctx, what, func() (limits.Verdict, error) {
		v, err := p.send(ctx, method, path, query, body, out)
		if err != nil {
			return v, fmt.Errorf("%s: %w", what, err)
		}
		return v, nil
	})
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
	ctx, wrote := trackerhttp.Watch(ctx)
	req, err := http.NewRequestWithContext(ctx, method, u.String(), payload)
	if err != nil {
		return limits.Unjudged, fmt.Errorf("%w: %w", tracker.ErrNotSent, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := p.host.Client().Do(req)
	if err != nil {
		v, f := trackerhttp.Failure(err)
		if !wrote() {
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
		v, f := trackerhttp.Failure(err) // the answer stopped coming: a timeout, a cut connection, too large
		return v, errors.New(f)
	}
	return limits.Answered, nil
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
