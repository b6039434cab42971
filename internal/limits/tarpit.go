package limits

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Defaults for a Tarpit (docs/contract.md#fair-share).
const (
	// DefaultTarpitHold is the longest a refusal is held.
	DefaultTarpitHold = time.Second
	// DefaultTarpitHeld bounds the refusals held at once: each is a
	// sleeping goroutine and the connection the client keeps open anyway.
	DefaultTarpitHeld = 1024
)

// Tarpit holds a refusal for the wait it names before it is answered, so a
// client that retries at once instead of after Retry-After (a synchronous
// loop, a flood) waits anyway: refused at once it retries thousands of
// times a second, each retry costing both sides CPU every other tenant
// needs. A client that honours the wait loses nothing, since it would
// have waited as long; the answer says what is left of the wait. At most
// held refusals wait at once; past that one is answered at once, so the
// held goroutines stay bounded. It is safe for concurrent use.
type Tarpit struct {
	hold time.Duration
	max  int64
	held atomic.Int64
}

// NewTarpit returns a Tarpit holding a refusal for at most hold, with at
// most held refusals waiting at once. A hold of 0 holds nothing.
func NewTarpit(hold time.Duration, held int) (*Tarpit, error) {
	if hold < 0 || held < 0 {
		return nil, fmt.Errorf("limits: want a tarpit hold ≥ 0 and held refusals ≥ 0 (got %s, %d)", hold, held)
	}
	return &Tarpit{hold: hold, max: int64(held)}, nil
}

// Hold waits for wait, at most the Tarpit's hold, or until ctx ends, and
// returns what is left of wait to tell the client. With as many refusals
// held as allowed it returns wait at once. A nil Tarpit holds nothing.
func (t *Tarpit) Hold(ctx context.Context, wait time.Duration) time.Duration {
	d := min(wait, spread(t.holdFor()))
	if d <= 0 {
		return wait
	}
	if t.held.Add(1) > t.max {
		t.held.Add(-1)
		return wait
	}
	defer t.held.Add(-1)
	timer := time.NewTimer(d)
	defer timer.Stop()
	start := time.Now()
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	return max(0, wait-time.Since(start))
}

// spread shortens the hold bound to a random 75–100 % of d (a shorter
// wait is held whole). Refusals of a flood
// that arrived together and were held alike would come back together, a
// wave every other tenant's calls land behind; spread holds thin the waves
// out (docs/perf.md, the flood's tail).
func spread(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	return d - time.Duration(rand.Int64N(int64(d)/4+1))
}

func (t *Tarpit) holdFor() time.Duration {
	if t == nil {
		return 0
	}
	return t.hold
}

// Held reports how many refusals are held now.
func (t *Tarpit) Held() int { return int(t.held.Load()) }
