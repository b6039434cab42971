package github

import (
	"context"
	"fmt"
	"math"
	"time"

	gh "github.com/google/go-github/v84/github"

	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/tracker"
)

// The defaults of the per-host bounds (Options).
const (
	// DefaultHostConcurrency: GitHub asks for requests one token at a
	// time, and every tenant of a replica may share api.github.com.
	DefaultHostConcurrency = 16
	DefaultBreakerFailures = 5
	DefaultBreakerCoolDown = 30 * time.Second
)

// hosts bounds the requests to each tracker host, all tenants together:
// at most HostConcurrency in flight, and none while the host's breaker is
// open. A hanging host then holds its own share of requests only, and
// once it has stopped answering costs a request nothing but the refusal.
type hosts struct {
	slots    *limits.Slots
	share    int
	breakers *limits.Breakers
}

// newHosts takes opts with its defaults applied (Opener).
func newHosts(opts Options) *hosts {
	slots, _ := limits.NewSlots(math.MaxInt32, opts.HostConcurrency)                   // cannot fail: > 0
	breakers, _ := limits.NewBreakers(opts.BreakerFailures, opts.BreakerCoolDown, nil) // cannot fail: both > 0
	return &hosts{slots: slots, share: opts.HostConcurrency, breakers: breakers}
}

// do sends one request to t's host once one of the host's slots is free
// and its breaker lets it go; a request that waited in vain or met an open
// breaker was not sent (tracker.ErrNotSent, *tracker.HostDownError).
func (t *repoTracker) do(ctx context.Context, what string, call func(ctx context.Context) (*gh.Response, error)) error {
	// The breaker first: a host known to be down is refused at once, not
	// after a wait for one of the slots its hanging requests hold.
	done, wait, ok := t.hosts.breakers.Allow(t.host)
	if !ok {
		return fmt.Errorf("%s: %w", what, &tracker.HostDownError{Host: t.host, RetryAfter: wait})
	}
	release, err := t.hosts.slots.Acquire(ctx, t.host)
	if err != nil {
		done(limits.Unjudged)
		return fmt.Errorf("%s: %w: wait for one of the host's %d requests: %w", what, tracker.ErrNotSent, t.hosts.share, err)
	}
	defer release()
	v, err := classify(ctx, what, call)
	done(v)
	return err
}
