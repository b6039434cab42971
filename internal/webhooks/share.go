package webhooks

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
)

// shares caps how many of one replica's delivery workers a tenant, and one
// subscription of it, may hold at once (docs/contract.md#fair-share). Without it a receiver
// that hangs holds a worker for the whole attempt timeout per request, and
// with a backlog it soon holds all of them: every other tenant's deliveries
// wait behind one slow endpoint. With it a slow receiver holds its own share
// only; the rest of the pool keeps serving everyone else.
type shares struct {
	perTenant, perSubscription int

	mu     sync.Mutex
	tenant map[string][]time.Time // start of each attempt in flight
	sub    map[uuid.UUID][]time.Time
}

func newShares(perTenant, perSubscription int) *shares {
	return &shares{
		perTenant: perTenant, perSubscription: perSubscription,
		tenant: map[string][]time.Time{}, sub: map[uuid.UUID][]time.Time{},
	}
}

// take reserves a worker for one attempt of tenant's subscription sub. When
// either is at its share it reports false and how long the job should wait
// before trying again. A job queued before subscription IDs were carried in
// its arguments has uuid.Nil and is held to the tenant's share alone. The
// returned release must be called once the attempt is over.
func (s *shares) take(tenant string, sub uuid.UUID, attemptTimeout time.Duration) (release func(), wait time.Duration, ok bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.tenant[tenant]) >= s.perTenant:
		return nil, waitFor(s.tenant[tenant], now, attemptTimeout), false
	case sub != uuid.Nil && len(s.sub[sub]) >= s.perSubscription:
		return nil, waitFor(s.sub[sub], now, attemptTimeout), false
	}
	s.tenant[tenant] = append(s.tenant[tenant], now)
	if sub != uuid.Nil {
		s.sub[sub] = append(s.sub[sub], now)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		drop(s.tenant, tenant, now)
		if sub != uuid.Nil {
			drop(s.sub, sub, now)
		}
	}, 0, true
}

// waitFor is how long a job over its share is put back in the queue for.
// Holders that answer fast free the share in moments, so the job waits about
// as long as the oldest has run (at least 50ms). Holders that have run a
// second or more are a slow receiver, which frees a slot only when an
// attempt ends, at worst at its timeout: the job waits until then, plus
// jitter over a quarter of the timeout so the waiting jobs return spread out.
// A hanging receiver's backlog thus costs the queue about one wake-up per
// job per attempt timeout, not a busy loop that would crowd other tenants'
// jobs out of the queue's fetches.
func waitFor(starts []time.Time, now time.Time, attemptTimeout time.Duration) time.Duration {
	oldest := slices.MinFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
	held := now.Sub(oldest)
	if held < time.Second {
		base := max(held, 50*time.Millisecond)
		return base + rand.N(base/2+1)
	}
	untilEnd := max(oldest.Add(attemptTimeout).Sub(now), 50*time.Millisecond)
	return untilEnd + rand.N(attemptTimeout/4+1)
}

// drop removes one attempt that started at start from m[k].
func drop[K comparable](m map[K][]time.Time, k K, start time.Time) {
	starts := m[k]
	if i := slices.Index(starts, start); i >= 0 {
		starts = slices.Delete(starts, i, i+1)
	}
	if len(starts) == 0 {
		delete(m, k)
		return
	}
	m[k] = starts
}
