package limits

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// ErrWorkQueueFull is Work.Acquire's refusal: the server is doing all the
// work it may at once and the tenant already has its whole queue waiting.
var ErrWorkQueueFull = errors.New("limits: this tenant has as much work waiting as it may")

// WorkRetryAfter is the wait suggested with ErrWorkQueueFull and
// ErrAdmissionWait: a place frees when one of the tenant's own queued
// calls starts, which no bucket can predict.
const WorkRetryAfter = time.Second

// WorkSlotsFor is the default bound on work in flight for a database pool
// of pool connections (0: unknown): two per core, since writes and list
// pages are mostly CPU once their transaction has its connection, and
// below the pool (1 for a pool of 1 or 2), so work that holds a connection
// leaves one for everything else.
func WorkSlotsFor(pool int) int {
	slots := 2 * runtime.GOMAXPROCS(0)
	if pool > 0 {
		slots = min(slots, max(1, pool-1))
	}
	return slots
}

// Work bounds the server's work in flight (writes and list pages) and,
// when all of it is taken, hands each freed slot to the waiting tenants
// in turn, one call each, so every tenant with work waiting gets an
// equal share however many calls each sends: a tenant with 15 calls
// waiting and a tenant with 1 alternate, and the one call waits for one
// slot to free, not for the 15. Each tenant may have queue calls waiting;
// past that Acquire refuses at once (ErrWorkQueueFull), so the queue is
// bounded by tenants × queue and a refusal costs a lock and a map lookup.
// It is safe for concurrent use.
type Work struct {
	slots, queue int

	mu      sync.Mutex
	running int
	waiting map[string]*workQueue // tenants with calls waiting
	turns   *list.List            // of *workQueue: whose call gets the next slot, front first
	// waitedOut is when a call last waited out the admission bound without
	// a slot, zero once a slot is free again with nobody waiting
	// (Exhausted).
	waitedOut time.Time
}

type workQueue struct {
	tenant  string
	waiters *list.List // of *workWaiter, first come first served
	turn    *list.Element
}

type workWaiter struct {
	ready   chan struct{} // closed when granted
	granted bool
}

// NewWork returns a Work running at most slots calls at once, with at most
// queue calls of one tenant waiting.
func NewWork(slots, queue int) (*Work, error) {
	if slots <= 0 || queue < 0 {
		return nil, fmt.Errorf("limits: want work slots > 0 and a queue ≥ 0 (got slots %d, queue %d)", slots, queue)
	}
	return &Work{slots: slots, queue: queue, waiting: make(map[string]*workQueue), turns: list.New()}, nil
}

// Slots is the bound on work in flight.
func (w *Work) Slots() int { return w.slots }

// Acquire takes one slot for tenant's call, waiting its turn when all are
// taken, until ctx ends (its error is returned and nothing is held). With
// the tenant's queue full it returns ErrWorkQueueFull at once. Call release
// exactly once when the work is done.
func (w *Work) Acquire(ctx context.Context, tenant string) (release func(), err error) {
	return w.acquire(ctx, tenant, true)
}

// acquire is Acquire; bounded=false queues the call past the tenant's
// queue bound too, for a call that already holds its place in the server's
// work (one coming back from the outside, Outside).
func (w *Work) acquire(ctx context.Context, tenant string, bounded bool) (release func(), err error) {
	w.mu.Lock()
	if w.running < w.slots {
		w.running++
		w.mu.Unlock()
		return w.releaser(), nil
	}
	q := w.waiting[tenant]
	if bounded && (q != nil && q.waiters.Len() >= w.queue || q == nil && w.queue == 0) {
		w.mu.Unlock()
		return nil, ErrWorkQueueFull
	}
	if q == nil {
		q = &workQueue{tenant: tenant, waiters: list.New()}
		q.turn = w.turns.PushBack(q)
		w.waiting[tenant] = q
	}
	me := &workWaiter{ready: make(chan struct{})}
	el := q.waiters.PushBack(me)
	w.mu.Unlock()

	select {
	case <-me.ready:
		return w.releaser(), nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	granted := me.granted
	if !granted {
		w.leave(q, el)
		if errors.Is(context.Cause(ctx), ErrAdmissionWait) {
			w.waitedOut = time.Now()
		}
	}
	w.mu.Unlock()
	if granted {
		// The slot was handed over as ctx ended: pass it on.
		w.releaser()()
	}
	return nil, ctx.Err()
}

// releaser returns the release of one held slot: it hands the slot to the
// tenant whose turn is next, or frees it when no one waits.
func (w *Work) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			front := w.turns.Front()
			if front == nil {
				w.running--
				w.waitedOut = time.Time{}
				return
			}
			q := front.Value.(*workQueue)
			el := q.waiters.Front()
			next := el.Value.(*workWaiter)
			next.granted = true
			close(next.ready)
			w.leave(q, el)
			if q.waiters.Len() > 0 {
				w.turns.MoveToBack(q.turn) // the others' turn before its next call
			}
		})
	}
}

// leave takes a waiter out of its tenant's queue, and the tenant out of
// the turns when none of its calls waits any more. w.mu is held.
func (w *Work) leave(q *workQueue, el *list.Element) {
	q.waiters.Remove(el)
	if q.waiters.Len() == 0 {
		w.turns.Remove(q.turn)
		delete(w.waiting, q.tenant)
	}
}

// Exhausted reports how long ago a call last waited out the admission
// bound without getting a slot (ErrAdmissionWait), and ok=false when none
// has since a slot was last free with nobody waiting. Calls that wait and
// are served do not count: a queue that never empties but moves is
// contention shared out, not a server out of room. /readyz is 503 while
// it is under the wait a call may spend (Admission.Exhausted).
func (w *Work) Exhausted() (ago time.Duration, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waitedOut.IsZero() {
		return 0, false
	}
	return time.Since(w.waitedOut), true
}

// Busy reports the work in flight and the calls waiting, for tests and
// metrics.
func (w *Work) Busy() (running, waiting int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range w.waiting {
		waiting += q.waiters.Len()
	}
	return w.running, waiting
}
