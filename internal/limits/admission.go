package limits

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Defaults for the admission settings (docs/operators.md#admission-and-fair-share).
const (
	// DefaultAdmissionWait bounds how long a call waits its turn for the
	// server's work (TICKETD_ADMISSION_WAIT).
	DefaultAdmissionWait = 10 * time.Second
	// DefaultTenantQueue bounds the calls of one tenant waiting their turn
	// (TICKETD_TENANT_QUEUE).
	DefaultTenantQueue = 256
	// DefaultOutsideConcurrency bounds one tenant's calls to the outside
	// (trackers) at once (TICKETD_TRACKER_CONCURRENCY).
	DefaultOutsideConcurrency = 4
)

// ErrAdmissionWait is Admission.Admit's refusal of a call that waited its
// turn as long as it may (the wait bound) without getting it.
var ErrAdmissionWait = errors.New("limits: this call waited its turn for the server's work as long as it may")

// Admission is the one door every call that is the server's work (a write
// or a list page, over MCP or REST) goes through. It is work-conserving: a
// call takes a free slot at once, so a tenant alone may use the whole
// server; a call that finds none waits in its tenant's queue, and the
// queues are served in turn (Work), so under contention every tenant with
// work waiting gets an equal share. A list page first takes one of its
// tenant's page slots (Slots), so one tenant's pages cannot take the CPU
// every other call needs. A call is refused only past the wait bound
// (ErrAdmissionWait) or with its tenant's queue full (ErrWorkQueueFull).
// It is safe for concurrent use.
type Admission struct {
	work  *Work
	pages *Slots
	wait  time.Duration
}

// NewAdmission returns the Admission over work and pages in which a call
// waits at most wait for its turn.
func NewAdmission(work *Work, pages *Slots, wait time.Duration) (*Admission, error) {
	if work == nil || pages == nil || wait <= 0 {
		return nil, fmt.Errorf("limits: admission wants work, page slots and a wait > 0 (got wait %s)", wait)
	}
	return &Admission{work: work, pages: pages, wait: wait}, nil
}

// Work is the work slots calls are admitted to.
func (a *Admission) Work() *Work { return a.work }

// Exhausted reports whether the work every tenant shares is out of room:
// a call waited as long as it may without a slot, within the last wait
// bound (or two of the waits a refusal suggests, WorkRetryAfter, if that
// is longer: a refusal may be held that long before it is answered), and
// no slot has been free with nobody waiting since. The server then
// refuses calls for want of room, and /readyz says so.
func (a *Admission) Exhausted() bool {
	ago, ok := a.work.Exhausted()
	return ok && ago < max(a.wait, 2*WorkRetryAfter)
}

// Admit takes tenant's call into the server's work, waiting its turn up to
// the wait bound: for a list page (page) one of the tenant's page slots
// first, then a work slot. It returns the context to run the call in,
// which lets Outside give the slot up while the call waits on the outside,
// and release, to call exactly once when the call is done. Errors:
// ErrWorkQueueFull, ErrAdmissionWait (both rate_limited), or ctx's error
// when the caller went away while it waited; nothing is held after any.
func (a *Admission) Admit(ctx context.Context, tenant string, page bool) (context.Context, func(), error) {
	wctx, cancel := context.WithTimeoutCause(ctx, a.wait, ErrAdmissionWait)
	defer cancel()
	refusal := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(wctx), ErrAdmissionWait) {
			return ErrAdmissionWait
		}
		return err
	}
	releasePage := func() {}
	if page {
		r, err := a.pages.Acquire(wctx, tenant)
		if err != nil {
			return ctx, nil, refusal(err)
		}
		releasePage = r
	}
	release, err := a.work.Acquire(wctx, tenant)
	if err != nil {
		releasePage()
		return ctx, nil, refusal(err)
	}
	h := &heldSlot{work: a.work, tenant: tenant, release: release}
	var once sync.Once
	return context.WithValue(ctx, heldSlotKey{}, h), func() {
		once.Do(func() {
			h.end()
			releasePage()
		})
	}, nil
}

type heldSlotKey struct{}

// heldSlot is the work slot an admitted call holds, which it gives up
// while it waits on the outside.
type heldSlot struct {
	work   *Work
	tenant string

	mu      sync.Mutex
	release func() // nil while stepped out
	ended   bool   // the call was released: it takes no slot again
}

func (h *heldSlot) stepOut() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.release != nil {
		h.release()
		h.release = nil
	}
}

// end gives the slot up for good: an outside call still running past its
// call's release (which a call should not leave behind) takes none back.
func (h *heldSlot) end() {
	h.mu.Lock()
	h.ended = true
	h.mu.Unlock()
	h.stepOut()
}

// stepIn takes a work slot again, waiting its turn past the queue bound
// and the wait bound (the call is already admitted: what it does next is
// record what the outside answered), until ctx ends; then the call goes
// on without one, so the record is still written.
func (h *heldSlot) stepIn(ctx context.Context) {
	h.mu.Lock()
	ended := h.ended
	h.mu.Unlock()
	if ended {
		return
	}
	release, err := h.work.acquire(ctx, h.tenant, false)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended || h.release != nil {
		// Ended meanwhile, or another outside call of the same call came
		// back first and holds the slot again: one slot per call.
		release()
		return
	}
	h.release = release
}

// Outside bounds each tenant's calls to the outside world (a tracker's
// API) at once, and runs them without the work slot their call holds: a
// call that waits on a slow or hanging tracker then costs its own tenant's
// outside calls only, never the work slots every tenant shares. It is
// safe for concurrent use.
type Outside struct {
	// tenants holds the per-tenant caps; its total is unbounded, since an
	// outside call holds nothing every tenant shares.
	tenants *Slots
}

// NewOutside returns an Outside letting each tenant make perTenant calls
// at once.
func NewOutside(perTenant int) (*Outside, error) {
	if perTenant <= 0 {
		return nil, fmt.Errorf("limits: want outside calls per tenant > 0 (got %d)", perTenant)
	}
	s, err := NewSlots(math.MaxInt32, perTenant)
	if err != nil {
		return nil, err
	}
	return &Outside{tenants: s}, nil
}

// Do runs call, a call to the outside world for tenant: it gives up the
// work slot ctx holds (Admission.Admit), if any, waits for one of the
// tenant's outside slots, runs call, and takes a work slot again before it
// returns, so what the call answered is recorded under a slot. If ctx ends
// before an outside slot frees, call never runs and Do returns ctx's error.
func (o *Outside) Do(ctx context.Context, tenant string, call func() error) error {
	h, _ := ctx.Value(heldSlotKey{}).(*heldSlot)
	if h != nil {
		h.stepOut()
		defer h.stepIn(ctx)
	}
	release, err := o.tenants.Acquire(ctx, tenant)
	if err != nil {
		return fmt.Errorf("wait for one of the tenant's %d outside calls: %w", o.tenants.share, err)
	}
	defer release()
	return call()
}
