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
		release, _, ok := s.take(tenant, sub, 10*time.Second)
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
	release, _, ok := s.take("acme", a, 10*time.Second)
	if !ok {
		t.Fatal("no worker")
	}
	release()
	clock = clock.Add(forgetAfter)
	release, _, ok = s.take("acme", a, 10*time.Second)
	if !ok {
		t.Fatal("no worker after idling")
	}
	defer release()
	if len(s.sub) != 1 || len(s.tenant) != 1 || s.sub[a].fast {
		t.Fatalf("after idling %v: %d subscriptions, %d tenants, fast=%v remembered; want one fresh entry each", forgetAfter, len(s.sub), len(s.tenant), s.sub[a].fast)
	}
	if _, _, ok := s.take("acme", a, 10*time.Second); ok {
		t.Fatal("a subscription forgotten as idle borrowed before answering quickly")
	}
}
