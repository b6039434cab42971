// Package limits gives every tenant its share of the server: token buckets
// for reads and writes, a cap on concurrent requests, and a global bound on
// request body bytes held at once. It knows tenants as strings and nothing
// of HTTP or MCP; the transports turn a refusal into rate_limited (MCP,
// with retry_after_ms) or 429 with Retry-After (REST).
//
// Health and readiness probes must never pass through a limiter: the wiring
// mounts them outside it, so an overloaded tenant never makes a replica look
// dead.
package limits

import (
	"container/list"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults for Config's zero values (docs/contract.md#configuration).
const (
	DefaultConcurrency = 64
	DefaultMaxTenants  = 10000
	DefaultIdleTimeout = 10 * time.Minute
	// ConcurrencyRetryAfter is the wait suggested to a tenant at its
	// concurrency cap: a slot frees when one of its own requests ends,
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
	// Concurrency caps each tenant's requests in flight
	// (TICKETD_TENANT_CONCURRENCY); 0 means DefaultConcurrency, negative
	// turns the cap off.
	Concurrency int
	// MaxTenants bounds how many tenants are tracked; past it the least
	// recently seen idle tenant is forgotten. 0 means DefaultMaxTenants.
	MaxTenants int
	// IdleTimeout forgets a tenant with nothing in flight that has not been
	// seen for this long; 0 means DefaultIdleTimeout. Keep it longer than a
	// bucket takes to refill (Burst / rate): then forgetting a tenant loses
	// nothing, since its bucket would be full again anyway.
	IdleTimeout time.Duration
	// Now is the clock; time.Now if nil. Tests move it.
	Now func() time.Time
}

// Tenants holds the per-tenant limiters. Its map cannot grow without
// bound: a stream of new tenants evicts idle ones (MaxTenants, IdleTimeout),
// and a tenant with requests in flight is never evicted, so its concurrency
// count stays right. It is safe for concurrent use.
type Tenants struct {
	cfg Config

	mu      sync.Mutex
	entries map[string]*list.Element // of *tenant
	lru     *list.List               // front: most recently seen
}

type tenant struct {
	id       string
	reads    *rate.Limiter // nil: off
	writes   *rate.Limiter // nil: off
	inflight int
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
	return &Tenants{cfg: cfg, entries: make(map[string]*list.Element), lru: list.New()}, nil
}

// Allow takes one request of kind from tenant's bucket. When the bucket is
// empty it takes nothing and says how long until a request would pass.
func (t *Tenants) Allow(tenantID string, kind Kind) (ok bool, retryAfter time.Duration) {
	t.mu.Lock()
	now := t.cfg.Now()
	tn := t.touch(tenantID, now)
	lim := tn.reads
	if kind == Write {
		lim = tn.writes
	}
	t.mu.Unlock()
	if lim == nil {
		return true, 0
	}
	// The limiter has its own lock; reserving and cancelling keeps the
	// bucket untouched when the answer is no.
	r := lim.ReserveN(now, 1)
	if delay := r.DelayFrom(now); delay > 0 {
		r.CancelAt(now)
		return false, delay
	}
	return true, 0
}

// Acquire takes one of tenant's concurrency slots; call release exactly
// once when the request ends. At the cap it takes nothing and returns
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
// nothing in flight. A tenant with requests in flight stays (its count must
// survive); if all scanned entries are busy the map may exceed MaxTenants
// by at most the requests in flight, which the concurrency caps bound.
func (t *Tenants) evict(now time.Time) {
	el := t.lru.Back()
	for i := 0; el != nil && i < evictScan; i++ {
		prev := el.Prev()
		tn := el.Value.(*tenant)
		idle := tn.inflight == 0
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

// Bytes bounds the request body bytes held at once across all tenants, so
// many slow uploads cannot together exhaust memory. It is safe for
// concurrent use.
type Bytes struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// NewBytes returns a Bytes admitting up to limit bytes at once.
func NewBytes(limit int64) (*Bytes, error) {
	if limit <= 0 {
		return nil, errors.New("limits: the body byte budget must be positive")
	}
	return &Bytes{limit: limit}, nil
}

// Reserve takes n bytes of the budget; call release exactly once when the
// body is no longer held. When the budget cannot cover n it takes nothing.
func (b *Bytes) Reserve(n int64) (release func(), ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n < 0 || b.used+n > b.limit {
		return nil, false
	}
	b.used += n
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.used -= n
		})
	}, true
}
