package limits_test

import (
	"context"
	"errors"
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

// TestTenantsWithRefusalsHeldStay: a hostile stream of new tenants does
// not make the map forget a tenant whose refusals are being held, whose
// count the next refusal's wait is named from.
func TestTenantsWithRefusalsHeldStay(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 1, Burst: 1, MaxTenants: 100, RefusalHold: time.Hour, Now: c.Now})
	_, alone := drain(t, l, "busy", limits.Write)
	ctx, cancel := context.WithCancel(t.Context())
	held := make(chan struct{})
	go func() { defer close(held); l.Hold(ctx, "busy", time.Hour) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, wait := l.Spent("busy", limits.Write); wait > alone {
			break
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatal("the held refusal never counted in busy's wait")
		}
	}
	for i := range 10000 {
		l.Allow(fmt.Sprintf("hostile-%d", i), limits.Write)
	}
	if spent, wait := l.Spent("busy", limits.Write); !spent || wait != alone+time.Second {
		t.Errorf("after 10000 new tenants busy's Spent = %v %s, want true %s: it was forgotten with a refusal held", spent, wait, alone+time.Second)
	}
	cancel()
	<-held
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
	for name, b := range map[string][3]int64{
		"ZeroBudget":      {0, 0, 0},
		"ZeroShare":       {100, 0, 10},
		"ShareOverBudget": {100, 101, 10},
		"MarginOver":      {100, 50, 101},
	} {
		if _, err := limits.NewBodies(b[0], b[1], b[2]); err == nil {
			t.Errorf("%s: NewBodies accepted %v", name, b)
		}
	}
	for _, s := range [][2]int{{0, 0}, {4, 0}, {2, 3}} {
		if _, err := limits.NewSlots(s[0], s[1]); err == nil {
			t.Errorf("NewSlots accepted total %d, share %d", s[0], s[1])
		}
	}
}

// TestBodiesTakesTheTenantShareFirst fills one tenant's share and checks
// that the tenant alone is refused, that other tenants still fit in the
// global budget, and that Spent reports the global budget running out.
func TestBodiesTakesTheTenantShareFirst(t *testing.T) {
	t.Parallel()
	b, err := limits.NewBodies(100, 40, 30)
	if err != nil {
		t.Fatal(err)
	}
	a := b.Hold("a")
	if got := a.Take(40); got != limits.Admitted {
		t.Fatalf("40 of a's 40 answered %v", got)
	}
	if got := b.Hold("a").Take(1); got != limits.TenantShare {
		t.Errorf("a's 41st byte (another request) answered %v, want TenantShare", got)
	}
	if b.Spent() {
		t.Error("Spent with 60 of 100 free and a margin of 30")
	}
	other, third := b.Hold("b"), b.Hold("c")
	if got := other.Take(40); got != limits.Admitted {
		t.Fatalf("b's 40 beside a's answered %v", got)
	}
	if !b.Spent() {
		t.Error("not Spent with 20 of 100 free and a margin of 30")
	}
	if got := third.Take(21); got != limits.Global {
		t.Errorf("c's 21 with 20 free answered %v, want Global", got)
	}
	if got := third.Take(-1); got == limits.Admitted {
		t.Error("a negative take was admitted")
	}
	a.Release()
	a.Release()
	if got := third.Take(40); got != limits.Admitted {
		t.Errorf("c's 40 after a released answered %v", got)
	}
	if got := third.Take(1); got != limits.TenantShare {
		t.Errorf("double release gave a's bytes back twice: c's 41st answered %v", got)
	}
	if got := b.Hold("a").Take(40); got != limits.Global {
		t.Errorf("a's 40 with 20 free answered %v, want Global", got)
	}
	other.Release()
	third.Release()
	if got := b.Hold("a").Take(40); got != limits.Admitted || b.Spent() {
		t.Errorf("after every release a's 40 answered %v (spent %v)", got, b.Spent())
	}
}

// TestSlotsShareOutTheTotal: a tenant holding its share waits behind
// itself, another tenant still gets a slot, and a waiter whose context
// ends holds nothing.
func TestSlotsShareOutTheTotal(t *testing.T) {
	t.Parallel()
	s, err := limits.NewSlots(3, 2)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	var held []func()
	for range 2 {
		r, err := s.Acquire(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(short, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a's third slot with a share of 2: %v, want to wait until the context ends", err)
	}
	rb, err := s.Acquire(ctx, "b")
	if err != nil {
		t.Fatalf("b beside a's full share: %v", err)
	}
	short, cancel = context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(short, "c"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("c with the total of 3 held: %v, want to wait", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := s.Acquire(ctx, "c")
		if err == nil {
			r()
		}
		got <- err
	}()
	held[0]()
	held[0]() // a second release frees nothing more
	if err := <-got; err != nil {
		t.Fatalf("c after a released one: %v", err)
	}
	for _, r := range []func(){held[1], rb} {
		r()
	}
	// Everything was given back: the whole total is free again.
	for _, tenant := range []string{"d", "d", "e"} {
		short, cancel := context.WithTimeout(ctx, time.Second)
		_, err := s.Acquire(short, tenant)
		cancel()
		if err != nil {
			t.Fatalf("%s after every release: %v", tenant, err)
		}
	}
}
