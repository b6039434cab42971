package limits_test

import (
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// clock is a manual clock for Config.Now.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTenants(tb testing.TB, cfg limits.Config) *limits.Tenants {
	tb.Helper()
	t, err := limits.New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return t
}

// drain takes requests until the bucket refuses and returns how many passed
// and the wait it then named.
func drain(tb testing.TB, l *limits.Tenants, tenant string, kind limits.Kind) (int, time.Duration) {
	tb.Helper()
	for n := 0; n < 100000; n++ {
		if ok, wait := l.Allow(tenant, kind); !ok {
			return n, wait
		}
	}
	return math.MaxInt, 0
}

func TestAllowBucketsPerTenantAndKind(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 10, ReadsPerSecond: 100, Now: c.Now})

	// Burst defaults to twice the rate.
	if n, wait := drain(t, l, "a", limits.Write); n != 20 || wait != 100*time.Millisecond {
		t.Fatalf("writes passed %d then waited %s, want 20 then 100ms", n, wait)
	}
	// Reads have their own bucket, and so does every other tenant.
	if n, _ := drain(t, l, "a", limits.Read); n != 200 {
		t.Errorf("reads after writes ran out: %d passed, want 200", n)
	}
	if n, _ := drain(t, l, "b", limits.Write); n != 20 {
		t.Errorf("tenant b's writes: %d passed, want 20", n)
	}
	// A refusal takes nothing: after the named wait exactly one more fits.
	c.Advance(100 * time.Millisecond)
	if n, wait := drain(t, l, "a", limits.Write); n != 1 || wait != 100*time.Millisecond {
		t.Errorf("after 100ms: %d passed then waited %s, want 1 then 100ms", n, wait)
	}
}

func TestAllowBurstAndOff(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 0.5, ReadsPerSecond: 0, Burst: 3, Now: c.Now})
	if n, wait := drain(t, l, "a", limits.Write); n != 3 || wait != 2*time.Second {
		t.Errorf("burst 3 at 0.5/s: %d passed then waited %s, want 3 then 2s", n, wait)
	}
	if n, _ := drain(t, l, "a", limits.Read); n != math.MaxInt {
		t.Errorf("reads at rate 0 were limited after %d", n)
	}
}

func TestAcquireCapsConcurrencyPerTenant(t *testing.T) {
	t.Parallel()
	l := newTenants(t, limits.Config{Concurrency: 2})
	r1, _, ok1 := l.Acquire("a")
	_, _, ok2 := l.Acquire("a")
	_, wait, ok3 := l.Acquire("a")
	if !ok1 || !ok2 || ok3 || wait != limits.ConcurrencyRetryAfter {
		t.Fatalf("acquires = %v %v %v (wait %s), want two slots then a refusal with %s", ok1, ok2, ok3, wait, limits.ConcurrencyRetryAfter)
	}
	if _, _, ok := l.Acquire("b"); !ok {
		t.Error("tenant b refused while only a is at its cap")
	}
	r1()
	r1() // a second release must not free a slot it never held
	if _, _, ok := l.Acquire("a"); !ok {
		t.Fatal("no slot after a release")
	}
	if _, _, ok := l.Acquire("a"); ok {
		t.Error("double release freed a second slot")
	}
}

func TestAcquireDefaultAndOff(t *testing.T) {
	t.Parallel()
	def := newTenants(t, limits.Config{})
	for i := range limits.DefaultConcurrency {
		if _, _, ok := def.Acquire("a"); !ok {
			t.Fatalf("default cap refused slot %d", i+1)
		}
	}
	if _, _, ok := def.Acquire("a"); ok {
		t.Errorf("default cap admitted %d", limits.DefaultConcurrency+1)
	}
	off := newTenants(t, limits.Config{Concurrency: -1})
	for i := range 1000 {
		if _, _, ok := off.Acquire("a"); !ok {
			t.Fatalf("cap off refused slot %d", i+1)
		}
	}
}

// TestTenantsStayBounded is the hostile stream of new tenants: the map
// stays at its bound, and a tenant with requests in flight keeps its count.
func TestTenantsStayBounded(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 1, MaxTenants: 100, Concurrency: 1, Now: c.Now})
	release, _, ok := l.Acquire("busy")
	if !ok {
		t.Fatal("first acquire refused")
	}
	for i := range 10000 {
		l.Allow(fmt.Sprintf("hostile-%d", i), limits.Write)
		if n := l.Len(); n > 100 {
			t.Fatalf("after %d new tenants %d are tracked, want ≤ 100", i+1, n)
		}
	}
	if _, _, ok := l.Acquire("busy"); ok {
		t.Fatal("the busy tenant was forgotten: its cap admitted a second request")
	}
	release()
}

func TestIdleTenantsAreForgotten(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 1, IdleTimeout: time.Minute, Now: c.Now})
	for i := range 10 {
		l.Allow(fmt.Sprintf("t%d", i), limits.Write)
	}
	c.Advance(time.Minute)
	l.Allow("newcomer", limits.Write)
	if n := l.Len(); n != 1 {
		t.Errorf("%d tenants tracked after the others idled out, want 1", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]limits.Config{
		"NegativeWrites": {WritesPerSecond: -1},
		"NaNReads":       {ReadsPerSecond: math.NaN()},
		"InfWrites":      {WritesPerSecond: math.Inf(1)},
		"NegativeBurst":  {Burst: -1},
		"NegativeMax":    {MaxTenants: -1},
		"NegativeIdle":   {IdleTimeout: -time.Second},
	} {
		if _, err := limits.New(cfg); err == nil {
			t.Errorf("%s: New accepted %+v", name, cfg)
		}
	}
	if _, err := limits.NewBytes(0); err == nil {
		t.Error("NewBytes accepted a zero budget")
	}
}

func TestBytesBoundsWhatIsHeld(t *testing.T) {
	t.Parallel()
	b, err := limits.NewBytes(100)
	if err != nil {
		t.Fatal(err)
	}
	r60, ok := b.Reserve(60)
	if !ok {
		t.Fatal("60 of 100 refused")
	}
	if _, ok := b.Reserve(50); ok {
		t.Fatal("110 of 100 admitted")
	}
	if _, ok := b.Reserve(-1); ok {
		t.Fatal("a negative reservation was admitted")
	}
	r60()
	r60()
	r50, ok := b.Reserve(50)
	if !ok {
		t.Fatal("50 refused after the 60 were released")
	}
	if _, ok := b.Reserve(51); ok {
		t.Error("double release returned bytes twice")
	}
	r50()
}
