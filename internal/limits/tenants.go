package limits

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for Config's zero values (docs/contract.md#configuration).
const (
	// DefaultConcurrency is the cap on a tenant's requests reading their
	// body at once when nothing says otherwise: an upload holds no
	// database connection and no work slot, only its bytes, which the body
	// budget bounds besides (Bodies).
	DefaultConcurrency = 64
	DefaultMaxTenants  = 10000
	DefaultIdleTimeout = 10 * time.Minute
	// ConcurrencyRetryAfter is the wait suggested to a tenant at its
	// concurrency cap: a slot frees when one of its own uploads is in,
	// which no bucket can predict.
	ConcurrencyRetryAfter = time.Second
)

// Kind says which bucket a request draws from.
type Kind int

const (
	// Read is a request that changes nothing.
	Read Kind = iota
	// Write is a request that may change state.
	Write
)

// Config sets a Tenants' limits. Rates are in requests per second; 0 turns
// that limit off.
type Config struct {
	// WritesPerSecond is each tenant's sustained write rate
	// (TICKETD_RATE_LIMIT_WRITES).
	WritesPerSecond float64
	// ReadsPerSecond is each tenant's sustained read rate
	// (TICKETD_RATE_LIMIT_READS).
	ReadsPerSecond float64
	// Burst is each bucket's size (TICKETD_RATE_LIMIT_BURST); 0 means twice
	// the bucket's rate, at least 1.
	Burst int
	// Concurrency caps each tenant's requests reading their body at once
	// (TICKETD_TENANT_CONCURRENCY), which is what bounds its stalled
	// uploads; 0 means DefaultConcurrency, negative turns the cap off. What
	// a request runs once its body is in is Admission's.
	Concurrency int
	// MaxTenants bounds how many tenants are tracked; past it the least
	// recently seen idle tenant is forgotten. 0 means DefaultMaxTenants.
	MaxTenants int
	// IdleTimeout forgets a tenant with nothing in flight that has not been
	// seen for this long; 0 means DefaultIdleTimeout. Keep it longer than a
	// bucket takes to refill (Burst / rate): then forgetting a tenant loses
	// nothing, since its bucket would be full again anyway.
	IdleTimeout time.Duration
	// RefusalHold is the longest a refusal is held before it is answered
	// (Tarpit); 0 means DefaultTarpitHold, negative answers every refusal
	// at once.
	RefusalHold time.Duration
	// HeldRefusals bounds the refusals held at once; 0 means
	// DefaultTarpitHeld.
	HeldRefusals int
	// Now is the clock; time.Now if nil. Tests move it.
	Now func() time.Time
}

// Tenants holds the per-tenant limiters. Its map cannot grow without
// bound: a stream of new tenants evicts idle ones (MaxTenants, IdleTimeout),
// and a tenant with requests in flight is never evicted, so its concurrency
// count stays right. It is safe for concurrent use.
type Tenants struct {
	cfg    Config
	tarpit *Tarpit

	mu      sync.Mutex
	entries map[string]*list.Element // of *tenant
	lru     *list.List               // front: most recently seen
}

type tenant struct {
	id       string
	reads    *rate.Limiter // nil: off
	writes   *rate.Limiter // nil: off
	inflight int           // uploads in progress (Acquire)
	held     int           // refusals held now (Hold)
	seen     time.Time
}

// New checks cfg and returns its Tenants.
func New(cfg Config) (*Tenants, error) {
	switch {
	case cfg.WritesPerSecond < 0 || math.IsNaN(cfg.WritesPerSecond) || math.IsInf(cfg.WritesPerSecond, 0):
		return nil, fmt.Errorf("limits: write rate must be a finite number ≥ 0 (got %v)", cfg.WritesPerSecond)
	case cfg.ReadsPerSecond < 0 || math.IsNaN(cfg.ReadsPerSecond) || math.IsInf(cfg.ReadsPerSecond, 0):
		return nil, fmt.Errorf("limits: read rate must be a finite number ≥ 0 (got %v)", cfg.ReadsPerSecond)
	case cfg.Burst < 0:
		return nil, fmt.Errorf("limits: burst must be ≥ 0 (got %d)", cfg.Burst)
	case cfg.MaxTenants < 0:
		return nil, fmt.Errorf("limits: max tenants must be ≥ 0 (got %d)", cfg.MaxTenants)
	case cfg.IdleTimeout < 0:
		return nil, fmt.Errorf("limits: idle timeout must be ≥ 0 (got %s)", cfg.IdleTimeout)
	case cfg.HeldRefusals < 0:
		return nil, fmt.Errorf("limits: held refusals must be ≥ 0 (got %d)", cfg.HeldRefusals)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.MaxTenants == 0 {
		cfg.MaxTenants = DefaultMaxTenants
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RefusalHold == 0 {
		cfg.RefusalHold = DefaultTarpitHold
	}
	if cfg.HeldRefusals == 0 {
		cfg.HeldRefusals = DefaultTarpitHeld
	}
	tarpit, err := NewTarpit(max(0, cfg.RefusalHold), cfg.HeldRefusals)
	if err != nil {
		return nil, err
	}
	return &Tenants{cfg: cfg, tarpit: tarpit, entries: make(map[string]*list.Element), lru: list.New()}, nil
}

// Hold holds a refusal of tenant's that names wait before it is answered
// (Tarpit.Hold) and returns what is left of wait to tell the client. While
// it is held it counts among the tenant's callers that want the coming
// tokens (Allow), since its caller comes back for one.
func (t *Tenants) Hold(ctx context.Context, tenantID string, wait time.Duration) time.Duration {
	t.mu.Lock()
	tn := t.touch(tenantID, t.cfg.Now())
	tn.held++
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		tn.held--
		tn.seen = t.cfg.Now()
	}()
	return t.tarpit.Hold(ctx, wait)
}

// Allow takes one request of kind from tenant's bucket. When the bucket is
// empty it takes nothing and says how long until a request would pass:
// until the next token, plus a token's interval for each other caller of
// the tenant's that wants the coming tokens too: its other uploads in
// progress and its refusals being held (Hold). Naming only the next token
// would send every one of a tenant's concurrent callers back at once to
// find that one token, and all but one refused again; and since a refusal
// is held for the wait it names, a flood whose every caller was told the
// next token's 20 ms would be held 20 ms and spin the CPU every tenant
// shares (docs/perf.md, the flood).
func (t *Tenants) Allow(tenantID string, kind Kind) (ok bool, retryAfter time.Duration) {
	lim, now, ahead := t.bucketOf(tenantID, kind)
	if lim == nil {
		return true, 0
	}
	// The limiter has its own lock; reserving and cancelling keeps the
	// bucket untouched when the answer is no.
	r := lim.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		return false, delay + ahead*interval(lim)
	}
	return true, 0
}

// Spent reports, taking nothing, whether tenant's bucket of kind is empty
// now, and if so the wait Allow would name: a cheap look that lets a
// caller refuse before it pays to learn a request's kind for sure (Allow
// still decides every request that gets past it).
func (t *Tenants) Spent(tenantID string, kind Kind) (spent bool, retryAfter time.Duration) {
	lim, now, ahead := t.bucketOf(tenantID, kind)
	if lim == nil {
		return false, 0
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return false, 0
	}
	return true, time.Duration((1-tokens)*float64(interval(lim))) + ahead*interval(lim)
}

// bucketOf returns tenant's bucket of kind (nil: off), the time now, and
// how many other callers of the tenant's want the coming tokens.
func (t *Tenants) bucketOf(tenantID string, kind Kind) (lim *rate.Limiter, now time.Time, ahead time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now = t.cfg.Now()
	tn := t.touch(tenantID, now)
	lim = tn.reads
	if kind == Write {
		lim = tn.writes
	}
	return lim, now, time.Duration(max(0, tn.inflight-1) + tn.held)
}

// interval is the time a bucket takes to earn one token.
func interval(lim *rate.Limiter) time.Duration {
	return time.Duration(float64(time.Second) / float64(lim.Limit()))
}

// Acquire takes one of tenant's concurrency slots; call release exactly
// once when the request's body is in. At the cap it takes nothing and returns
// ok=false with ConcurrencyRetryAfter.
func (t *Tenants) Acquire(tenantID string) (release func(), retryAfter time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tn := t.touch(tenantID, t.cfg.Now())
	if t.cfg.Concurrency > 0 && tn.inflight >= t.cfg.Concurrency {
		return nil, ConcurrencyRetryAfter, false
	}
	tn.inflight++
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			tn.inflight--
			tn.seen = t.cfg.Now()
		})
	}, 0, true
}

// Len reports how many tenants are tracked.
func (t *Tenants) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// touch returns tenantID's entry, creating it (and evicting others to make
// room) if needed, and marks it most recently seen. t.mu is held.
func (t *Tenants) touch(tenantID string, now time.Time) *tenant {
	if el, ok := t.entries[tenantID]; ok {
		tn := el.Value.(*tenant)
		tn.seen = now
		t.lru.MoveToFront(el)
		return tn
	}
	t.evict(now)
	tn := &tenant{
		id:     tenantID,
		reads:  t.bucket(t.cfg.ReadsPerSecond),
		writes: t.bucket(t.cfg.WritesPerSecond),
		seen:   now,
	}
	t.entries[tenantID] = t.lru.PushFront(tn)
	return tn
}

// evictScan bounds the work one new tenant can cause: eviction looks at no
// more than this many of the least recently seen entries.
const evictScan = 16

// evict forgets idle tenants from the back of the LRU: every one idle past
// IdleTimeout among the oldest, and while over MaxTenants the oldest with
// nothing in flight. A tenant with uploads in flight or refusals held stays
// (its counts must survive); if all scanned entries are busy the map may
// exceed MaxTenants by at most those, which the concurrency caps and the
// tarpit's bound on held refusals bound.
func (t *Tenants) evict(now time.Time) {
	el := t.lru.Back()
	for i := 0; el != nil && i < evictScan; i++ {
		prev := el.Prev()
		tn := el.Value.(*tenant)
		idle := tn.inflight == 0 && tn.held == 0
		if idle && (now.Sub(tn.seen) >= t.cfg.IdleTimeout || len(t.entries) >= t.cfg.MaxTenants) {
			t.lru.Remove(el)
			delete(t.entries, tn.id)
		}
		el = prev
	}
}

func (t *Tenants) bucket(perSecond float64) *rate.Limiter {
	if perSecond == 0 {
		return nil
	}
	burst := t.cfg.Burst
	if burst == 0 {
		burst = max(1, int(math.Ceil(2*perSecond)))
	}
	return rate.NewLimiter(rate.Limit(perSecond), burst)
}
