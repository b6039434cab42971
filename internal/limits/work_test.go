package limits_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

func newWork(tb testing.TB, slots, queue int) *limits.Work {
	tb.Helper()
	w, err := limits.NewWork(slots, queue)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// grant is one Acquire waiting in its own goroutine.
type grant struct {
	tenant  string
	release chan func()
	err     chan error
}

func acquireAsync(w *limits.Work, ctx context.Context, tenant string) *grant {
	g := &grant{tenant: tenant, release: make(chan func(), 1), err: make(chan error, 1)}
	go func() {
		release, err := w.Acquire(ctx, tenant)
		if err != nil {
			g.err <- err
			return
		}
		g.release <- release
	}()
	return g
}

// waitWaiting waits until n calls wait (the goroutines have queued).
func waitWaiting(tb testing.TB, w *limits.Work, n int) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if _, waiting := w.Busy(); waiting == n {
			return
		}
	}
	_, waiting := w.Busy()
	tb.Fatalf("%d calls waiting, want %d", waiting, n)
}

// TestWorkServesWaitingTenantsInTurn: with every slot taken by tenant a
// and a's calls queued ahead, tenant b's one call gets the next slot that
// frees, and after it a's calls in order; a's queue past its bound is
// refused at once.
func TestWorkServesWaitingTenantsInTurn(t *testing.T) {
	t.Parallel()
	w := newWork(t, 2, 3)
	var running []func()
	for range 2 {
		release, err := w.Acquire(t.Context(), "a")
		if err != nil {
			t.Fatal(err)
		}
		running = append(running, release)
	}
	var queued []*grant
	for i := range 3 {
		queued = append(queued, acquireAsync(w, t.Context(), "a"))
		waitWaiting(t, w, i+1)
	}
	if _, err := w.Acquire(t.Context(), "a"); !errors.Is(err, limits.ErrWorkQueueFull) {
		t.Fatalf("a's call past its queue: %v, want ErrWorkQueueFull", err)
	}
	b := acquireAsync(w, t.Context(), "b")
	waitWaiting(t, w, 4)

	running[0]() // a's first queued call was first in turn
	first := <-queued[0].release
	running[1]() // then b's, ahead of a's other two
	select {
	case release := <-b.release:
		release()
	case <-time.After(5 * time.Second):
		t.Fatal("b's call did not get the next slot")
	}
	// b's slot went on to a's second call.
	second := <-queued[1].release
	first()
	third := <-queued[2].release
	second()
	third()
	if running, waiting := w.Busy(); running != 0 || waiting != 0 {
		t.Errorf("after every release: %d running, %d waiting", running, waiting)
	}
}

// TestWorkWaiterGivesUp: a call whose context ends while it waits holds
// nothing, and the slot it would have had goes to the next waiter.
func TestWorkWaiterGivesUp(t *testing.T) {
	t.Parallel()
	w := newWork(t, 1, 2)
	release, err := w.Acquire(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	gone := acquireAsync(w, ctx, "b")
	waitWaiting(t, w, 1)
	next := acquireAsync(w, t.Context(), "c")
	waitWaiting(t, w, 2)
	cancel()
	if err := <-gone.err; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	release()
	(<-next.release)()
	if running, waiting := w.Busy(); running != 0 || waiting != 0 {
		t.Errorf("after every release: %d running, %d waiting", running, waiting)
	}
	release() // a second call gives back nothing
	if running, _ := w.Busy(); running != 0 {
		t.Errorf("a second release freed a slot: %d running", running)
	}
}

func TestNewWorkRejectsBadBounds(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]int{{0, 1}, {-1, 1}, {1, -1}} {
		if _, err := limits.NewWork(c[0], c[1]); err == nil {
			t.Errorf("NewWork(%d, %d) accepted", c[0], c[1])
		}
	}
	if n := limits.WorkSlotsFor(4); n != min(3, limits.WorkSlotsFor(0)) {
		t.Errorf("WorkSlotsFor(4) = %d, want below the pool", n)
	}
	if n := limits.WorkSlotsFor(1); n != 1 {
		t.Errorf("WorkSlotsFor(1) = %d, want 1", n)
	}
}

// TestTarpitHoldsAtMostItsBound: a refusal is held for the wait it names
// (at most the hold) and told what is left; past the bound of held
// refusals one is answered at once with its whole wait.
func TestTarpitHoldsAtMostItsBound(t *testing.T) {
	t.Parallel()
	tp, err := limits.NewTarpit(50*time.Millisecond, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The bound is spread over 75–100 % of itself: 37.5–50 ms here.
	if left := tp.Hold(t.Context(), 2*time.Second); left > 2*time.Second-37*time.Millisecond || left < time.Second {
		t.Errorf("held a 2 s wait: %s left, want about 1.95 s", left)
	}
	if left := tp.Hold(t.Context(), 10*time.Millisecond); left != 0 {
		t.Errorf("held a 10 ms wait: %s left, want 0", left)
	}
	holding := make(chan struct{})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		close(holding)
		tp.Hold(ctx, time.Hour)
	}()
	<-holding
	for tp.Held() != 1 {
		time.Sleep(time.Millisecond)
	}
	if left := tp.Hold(t.Context(), time.Hour); left != time.Hour {
		t.Errorf("a refusal past the bound was held: %s left", left)
	}
	cancel()
	var none *limits.Tarpit
	if left := none.Hold(t.Context(), time.Second); left != time.Second {
		t.Errorf("a nil tarpit held a refusal: %s left", left)
	}
	if _, err := limits.NewTarpit(-1, 1); err == nil {
		t.Error("NewTarpit accepted a negative hold")
	}
}

// TestHeldRefusalsLengthenTheWait: a refusal being held is a caller that
// comes back for a token, so each one of the tenant's held adds a token's
// interval to the wait the next refusal names (and so to its hold). Were
// they left out, a flood's every caller would be told the next token's
// 100 ms here, held that long, and back at once (docs/perf.md, the flood).
// Another tenant's wait is its own.
func TestHeldRefusalsLengthenTheWait(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 10, Burst: 1, RefusalHold: time.Hour, Now: c.Now})
	_, alone := drain(t, l, "a", limits.Write)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() { l.Hold(ctx, "a", time.Hour) })
	}
	want := alone + 3*100*time.Millisecond
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, wait := l.Spent("a", limits.Write); wait == want {
			break
		} else if time.Now().After(deadline) {
			cancel()
			t.Fatalf("with 3 of a's refusals held Spent names %s, want %s (alone %s)", wait, want, alone)
		}
	}
	if ok, wait := l.Allow("a", limits.Write); ok || wait != want {
		t.Errorf("with 3 held Allow = %v %s, want a refusal naming %s", ok, wait, want)
	}
	if _, wait := drain(t, l, "b", limits.Write); wait != alone {
		t.Errorf("tenant b, none of its own held, waits %s, want %s", wait, alone)
	}
	cancel()
	wg.Wait()
	if _, wait := l.Spent("a", limits.Write); wait != alone {
		t.Errorf("once a's refusals are answered Spent names %s, want %s", wait, alone)
	}
}

// TestAllowNamesTheWaitOfTheQueue: a refused request is told to wait for
// the next token plus one for each other request of its tenant in flight,
// so concurrent callers do not all come back for the same token.
func TestAllowNamesTheWaitOfTheQueue(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := newTenants(t, limits.Config{WritesPerSecond: 10, Burst: 1, Now: c.Now})
	_, alone := drain(t, l, "a", limits.Write)
	var releases []func()
	for range 5 {
		release, _, ok := l.Acquire("a")
		if !ok {
			t.Fatal("Acquire refused under the cap")
		}
		releases = append(releases, release)
	}
	_, queued := drain(t, l, "a", limits.Write)
	if want := alone + 4*100*time.Millisecond; queued != want {
		t.Errorf("wait with 5 in flight = %s, want %s (alone %s)", queued, want, alone)
	}
	if spent, wait := l.Spent("a", limits.Write); !spent || wait != queued {
		t.Errorf("Spent = %v %s, want true %s", spent, wait, queued)
	}
	for _, release := range releases {
		release()
	}
	if spent, _ := l.Spent("a", limits.Read); spent {
		t.Error("an unlimited read bucket is spent")
	}
}
