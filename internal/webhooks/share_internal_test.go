package webhooks

import (
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestSharesLendIdleWorkersToFastReceiversOnly drives the shares of a
// four-worker replica (tenant share 2, subscription share 1, a reserve of
// one) on a clock the test moves, counting which attempts get a worker.
func TestSharesLendIdleWorkersToFastReceiversOnly(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := newShares(4, 2, 1, 10*time.Second)
	s.now = func() time.Time { return clock }
	a, b := uuid.New(), uuid.New()
	take := func(tenant string, sub uuid.UUID) func() {
		release, _, ok := s.take(tenant, sub, 10*time.Second, false)
		if !ok {
			return nil
		}
		return release
	}

	first := take("acme", a)
	if first == nil {
		t.Fatal("acme's first attempt got no worker")
	}
	if take("acme", a) != nil {
		t.Fatal("a subscription never heard from borrowed a worker over its share")
	}
	first() // answered at once: acme and a are fast

	var held []func()
	for range 4 {
		if r := take("acme", a); r != nil {
			held = append(held, r)
		}
	}
	if len(held) != 3 {
		t.Fatalf("a fast lone subscription got %d workers, want 3: its share of 1 and the idle ones but the reserve", len(held))
	}
	other := take("globex", b)
	if other == nil {
		t.Fatal("another tenant's first attempt found no worker in the reserve")
	}
	held[0]()
	held = held[1:]
	if take("acme", a) != nil {
		t.Fatal("acme borrowed the worker it freed while another tenant held the reserve")
	}
	other()

	clock = clock.Add(2 * time.Second) // acme's two attempts have now run past slowAfter (1s)
	if take("acme", a) != nil {
		t.Fatal("a subscription whose attempts run slow borrowed an idle worker")
	}
	for _, r := range held {
		r() // they ended slow
	}
	if take("acme", a) == nil {
		t.Fatal("a slow subscription lost its own share")
	}
	if take("acme", a) != nil {
		t.Fatal("a subscription whose latest attempt was slow borrowed an idle worker")
	}
	if take("globex", b) == nil {
		t.Fatal("another tenant found no worker beside a slow subscription at its share")
	}
}

// TestSharesForgetIdleReceivers: a subscription that has had nothing in
// flight for forgetAfter is dropped from the maps, and its next backlog
// waits for a quick answer before it borrows again.
func TestSharesForgetIdleReceivers(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := newShares(4, 2, 1, 10*time.Second)
	s.now = func() time.Time { return clock }
	a := uuid.New()
	release, _, ok := s.take("acme", a, 10*time.Second, false)
	if !ok {
		t.Fatal("no worker")
	}
	release()
	clock = clock.Add(forgetAfter)
	release, _, ok = s.take("acme", a, 10*time.Second, false)
	if !ok {
		t.Fatal("no worker after idling")
	}
	defer release()
	if len(s.sub) != 1 || len(s.tenant) != 1 || s.sub[a].fast {
		t.Fatalf("after idling %v: %d subscriptions, %d tenants, fast=%v remembered; want one fresh entry each", forgetAfter, len(s.sub), len(s.tenant), s.sub[a].fast)
	}
	if _, _, ok := s.take("acme", a, 10*time.Second, false); ok {
		t.Fatal("a subscription forgotten as idle borrowed before answering quickly")
	}
}

// TestSharesGiveASlowBacklogTurns: the backlog of a subscription whose
// attempts hang is put back in turns, about its share of jobs per attempt
// timeout from the moment the oldest attempt ends, not all for that moment;
// past parkHorizon attempt timeouts the rest wait that long, spread over a
// quarter more.
func TestSharesGiveASlowBacklogTurns(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	const timeout = 10 * time.Second
	s := newShares(8, 4, 2, timeout)
	s.now = func() time.Time { return clock }
	a := uuid.New()
	for range 2 {
		if _, _, ok := s.take("acme", a, timeout, false); !ok {
			t.Fatal("the subscription's share of 2 got no worker")
		}
	}
	clock = clock.Add(2 * time.Second) // both attempts have run past slowAfter (1s): they hang
	perWindow := map[time.Duration]int{}
	for i := range 40 {
		_, wait, ok := s.take("acme", a, timeout, false)
		if ok {
			t.Fatalf("put-back %d got a worker over a hanging subscription's share", i)
		}
		if wait < 8*time.Second || wait > parkHorizon*timeout*5/4 {
			t.Errorf("put-back %d waits %v, want from the oldest attempt's end (8s) to %v", i, wait, parkHorizon*timeout*5/4)
		}
		perWindow[wait/timeout]++
	}
	for window, n := range perWindow {
		if window < parkHorizon-1 && n > 3 {
			t.Errorf("%d put-backs come due within attempt timeout %d, want at most 3: the share of 2 and one turn's jitter", n, window)
		}
	}
	if n := perWindow[parkHorizon] + perWindow[parkHorizon+1]; n < 20 {
		t.Errorf("%d of 40 put-backs wait past the horizon, want the ones beyond its turns (about 29)", n)
	}
}

// TestSharesStopLendingByTheReceiversOwnPace: a subscription whose latest
// answer took 10ms stops borrowing once an attempt of it has been in
// flight for a quarter of slowAfter (250ms of a 10s timeout), not only
// once one has run slowAfter (1s).
func TestSharesStopLendingByTheReceiversOwnPace(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	s := newShares(8, 4, 1, 10*time.Second)
	s.now = func() time.Time { return clock }
	a := uuid.New()
	release, _, ok := s.take("acme", a, 10*time.Second, false)
	if !ok {
		t.Fatal("no worker")
	}
	clock = clock.Add(10 * time.Millisecond)
	release() // answered in 10ms
	if _, _, ok := s.take("acme", a, 10*time.Second, false); !ok {
		t.Fatal("the subscription's share got no worker")
	}
	if _, _, ok := s.take("acme", a, 10*time.Second, false); !ok {
		t.Fatal("a subscription that answered in 10ms borrowed no idle worker at once")
	}
	clock = clock.Add(300 * time.Millisecond) // its attempts now run 30 times its last answer
	if _, _, ok := s.take("acme", a, 10*time.Second, false); ok {
		t.Error("a subscription whose attempts have run 300ms, 30 times its last answer, borrowed another worker")
	}
}

// TestSharesPutARescuedJobFirst: among a hanging subscription's backlog
// put back in turns, a job put back ahead (a rescued delivery) takes the
// first turn, when the oldest attempt ends, and moves nobody's turn.
func TestSharesPutARescuedJobFirst(t *testing.T) {
	clock := time.Unix(1_700_000_000, 0)
	const timeout = 10 * time.Second
	s := newShares(8, 4, 1, timeout)
	s.now = func() time.Time { return clock }
	a := uuid.New()
	if _, _, ok := s.take("acme", a, timeout, false); !ok {
		t.Fatal("the subscription's share got no worker")
	}
	clock = clock.Add(2 * time.Second) // its attempt hangs; it ends at 8s from now at the latest
	for range 5 {
		s.take("acme", a, timeout, false) // the backlog, given turns at 8s, 18s, 28s…
	}
	_, wait, ok := s.take("acme", a, timeout, true)
	if ok || wait < 8*time.Second || wait > 18*time.Second {
		t.Errorf("a rescued job put back behind a backlog waits %v (ok %v), want the first turn, 8s to 18s", wait, ok)
	}
	if _, next, _ := s.take("acme", a, timeout, false); next < 58*time.Second {
		t.Errorf("the backlog's next job waits %v, want its own turn after the 5 before it (58s on)", next)
	}
}
