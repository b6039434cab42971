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
//
// The shares are work-conserving for receivers that answer: a tenant or
// subscription at its share may borrow an idle worker when its latest
// attempt ended within slowAfter and none of its attempts in flight has run
// that long, as long as a reserve of the replica's workers stays free. Left
// capped at half the workers, one subscription that received every write
// delivered fewer a second than one replica wrote
// (BenchmarkOneSubscriptionKeepsUp). The reserve is what another
// subscription's delivery finds when it arrives; once it is in use nobody
// borrows, and borrowed workers come back within slowAfter, so contention
// returns every one to its share. A receiver that hangs never borrows: its
// attempts are slow. One that answered and then hangs keeps what it
// borrowed until those attempts time out, and never more than all but the
// reserve.
type shares struct {
	perTenant, perSubscription int
	borrowUpTo                 int           // attempts in flight up to which one over its share may borrow
	slowAfter                  time.Duration // an attempt that runs this long marks its receiver slow
	now                        func() time.Time

	mu       sync.Mutex
	inFlight int
	tenant   map[string]*holders
	sub      map[uuid.UUID]*holders
	swept    time.Time
}

// forgetAfter is how long a tenant's or subscription's speed is remembered
// once it has no attempt in flight; then its next backlog borrows only once
// an attempt of it has answered quickly again.
const forgetAfter = time.Minute

// holders are one tenant's or subscription's attempts in flight and how
// fast the latest one to end answered.
type holders struct {
	starts []time.Time   // start of each attempt in flight
	fast   bool          // the latest attempt to end took less than slowAfter
	ended  time.Time     // when it ended
	took   time.Duration // how long it took
	next   time.Time     // the next turn putBack gives a job of a slow receiver's backlog
}

// newShares sizes the shares of a replica with workers workers. The reserve
// no borrower takes is an eighth of them, at least one.
func newShares(workers, perTenant, perSubscription int, attemptTimeout time.Duration) *shares {
	return &shares{
		perTenant: perTenant, perSubscription: perSubscription,
		borrowUpTo: workers - max(1, workers/8),
		slowAfter:  attemptTimeout / 10,
		now:        time.Now,
		tenant:     map[string]*holders{}, sub: map[uuid.UUID]*holders{},
	}
}

// take reserves a worker for one attempt of tenant's subscription sub. When
// either is at its share and may not borrow it reports false and how long
// the job should wait before trying again. A job queued before subscription
// IDs were carried in its arguments has uuid.Nil and is held to the
// tenant's share alone. A job put back ahead takes the first turn rather
// than the next: a delivery rescued from a replica that died, which came
// before the backlog its subscription has built up since. The returned
// release must be called once the attempt is over.
func (s *shares) take(tenant string, sub uuid.UUID, attemptTimeout time.Duration, ahead bool) (release func(), wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.swept) >= forgetAfter {
		s.swept = now
		forget(s.tenant, now)
		forget(s.sub, now)
	}
	t, sb := s.tenant[tenant], s.sub[sub]
	overTenant := t != nil && len(t.starts) >= s.perTenant
	overSub := sub != uuid.Nil && sb != nil && len(sb.starts) >= s.perSubscription
	borrow := s.inFlight < s.borrowUpTo && (!overTenant || t.answering(now, s.slowAfter)) && (!overSub || sb.answering(now, s.slowAfter))
	switch {
	case overTenant && !borrow:
		return nil, t.putBack(now, attemptTimeout, s.slowAfter, s.perTenant, ahead), false
	case overSub && !borrow:
		return nil, sb.putBack(now, attemptTimeout, s.slowAfter, s.perSubscription, ahead), false
	}
	s.inFlight++
	t = hold(s.tenant, tenant, now)
	if sub != uuid.Nil {
		sb = hold(s.sub, sub, now)
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		end := s.now()
		s.inFlight--
		t.drop(now, end, s.slowAfter)
		if sub != uuid.Nil {
			sb.drop(now, end, s.slowAfter)
		}
	}, 0, true
}

// answering says whether h's receiver answers quickly: its latest attempt
// ended within slowAfter, and none in flight has run past what that answer
// promises: eight times as long as it took, at least a quarter of
// slowAfter. Judged by slowAfter alone, a receiver that stopped answering
// went on borrowing for slowAfter (1s by default) after its last answer,
// long enough to take every worker it may borrow, and held them until its
// attempts timed out; judged by its own pace it stops within a quarter.
func (h *holders) answering(now time.Time, slowAfter time.Duration) bool {
	if !h.fast {
		return false
	}
	overdue := min(slowAfter, max(8*h.took, slowAfter/4))
	return !slices.ContainsFunc(h.starts, func(start time.Time) bool { return now.Sub(start) >= overdue })
}

// putBack is how long a job over h's share of share workers is put back in
// the queue for. Holders that answer fast free the share in moments, so the
// job waits about as long as the oldest has run (at least 50ms). Holders
// that have run slowAfter or more are a slow receiver, which frees a worker
// only when an attempt ends, at worst at its timeout: share workers per
// attempt timeout. Its backlog is given turns at that pace, in the order it
// is put back, from the oldest attempt's end on, each with jitter within
// its turn: about share jobs come due per attempt timeout. Put back all for
// the oldest attempt's end, a hanging receiver's whole backlog came due at
// once, by the thousand, and was fetched and put back again before the
// queue reached anyone else's jobs. Turns run parkHorizon ahead at most;
// the rest of the backlog waits that long, spread over a quarter more, so a
// receiver that answers again is caught up within about parkHorizon. A job
// put back ahead takes the first turn, when the oldest attempt ends, and
// moves no one else's.
func (h *holders) putBack(now time.Time, attemptTimeout, slowAfter time.Duration, share int, ahead bool) time.Duration {
	oldest := slices.MinFunc(h.starts, func(a, b time.Time) int { return a.Compare(b) })
	held := now.Sub(oldest)
	if held < slowAfter {
		base := max(held, 50*time.Millisecond)
		return base + rand.N(base/2+1)
	}
	turn := attemptTimeout / time.Duration(max(share, 1))
	horizon := parkHorizon * attemptTimeout
	at := oldest.Add(attemptTimeout)
	if ahead {
		return max(at.Sub(now), 50*time.Millisecond) + rand.N(turn+1)
	}
	if h.next.After(at) {
		at = h.next
	}
	if at.Sub(now) >= horizon {
		return horizon + rand.N(horizon/4+1)
	}
	h.next = at.Add(turn)
	return max(at.Sub(now), 50*time.Millisecond) + rand.N(turn+1)
}

// parkHorizon, in attempt timeouts, is how far ahead a slow receiver's
// backlog is given turns (putBack).
const parkHorizon = 6

// hold adds an attempt that starts at start to m[k].
func hold[K comparable](m map[K]*holders, k K, start time.Time) *holders {
	h := m[k]
	if h == nil {
		h = &holders{}
		m[k] = h
	}
	h.starts = append(h.starts, start)
	return h
}

// drop removes h's attempt that ran from start to end and notes whether it
// answered quickly.
func (h *holders) drop(start, end time.Time, slowAfter time.Duration) {
	if i := slices.Index(h.starts, start); i >= 0 {
		h.starts = slices.Delete(h.starts, i, i+1)
	}
	h.fast, h.ended, h.took = end.Sub(start) < slowAfter, end, end.Sub(start)
	if h.fast {
		h.next = time.Time{} // an answer: the backlog's turns start over from the attempts in flight
	}
}

// forget removes the entries of m with no attempt in flight for
// forgetAfter, so that subscriptions and tenants long idle or gone cost
// nothing.
func forget[K comparable](m map[K]*holders, now time.Time) {
	for k, h := range m {
		if len(h.starts) == 0 && now.Sub(h.ended) >= forgetAfter {
			delete(m, k)
		}
	}
}
