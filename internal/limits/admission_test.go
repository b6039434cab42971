package limits_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

func newAdmission(tb testing.TB, slots, queue, pageShare int, wait time.Duration) *limits.Admission {
	tb.Helper()
	pages, err := limits.NewSlots(2*pageShare, pageShare)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := limits.NewAdmission(newWork(tb, slots, queue), pages, wait)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// TestAdmissionServesATenantAloneAndRefusesOnlyPastTheBound: a tenant
// alone takes every slot, and its calls beyond them wait rather than being
// refused; one that waits past the bound is refused ErrAdmissionWait, one
// past a full queue ErrWorkQueueFull, and a caller that goes away gets its
// own context's error; nothing is held after any refusal.
func TestAdmissionServesATenantAloneAndRefusesOnlyPastTheBound(t *testing.T) {
	t.Parallel()
	a := newAdmission(t, 3, 1, 1, 200*time.Millisecond)
	var releases []func()
	for range 3 {
		_, release, err := a.Admit(t.Context(), "a", false)
		if err != nil {
			t.Fatalf("tenant a alone, a free slot: %v", err)
		}
		releases = append(releases, release)
	}
	waited := make(chan error, 1)
	go func() {
		_, release, err := a.Admit(t.Context(), "a", false)
		if err == nil {
			release()
		}
		waited <- err
	}()
	waitWaiting(t, a.Work(), 1)
	releases[0]()
	if err := <-waited; err != nil {
		t.Fatalf("a call that waited for a freed slot: %v, want admitted", err)
	}
	_, release, err := a.Admit(t.Context(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	releases[0] = release

	if _, _, err := a.Admit(t.Context(), "a", false); !errors.Is(err, limits.ErrAdmissionWait) {
		t.Fatalf("a call that waited past the bound: %v, want ErrAdmissionWait", err)
	}
	go func() { _, _, err := a.Admit(t.Context(), "b", false); waited <- err }()
	waitWaiting(t, a.Work(), 1)
	if _, _, err := a.Admit(t.Context(), "b", false); !errors.Is(err, limits.ErrWorkQueueFull) {
		t.Fatalf("a call past a full queue: %v, want ErrWorkQueueFull", err)
	}
	if err := <-waited; !errors.Is(err, limits.ErrAdmissionWait) {
		t.Fatalf("b's queued call: %v, want ErrAdmissionWait", err)
	}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := a.Admit(gone, "c", false); !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that went away: %v, want context.Canceled", err)
	}
	for _, r := range releases {
		r()
	}
	if running, waiting := a.Work().Busy(); running != 0 || waiting != 0 {
		t.Fatalf("after every release: %d running, %d waiting, want none", running, waiting)
	}
}

// TestAdmissionPagesTakeTheTenantsShareFirst: a tenant's list pages run at
// most its page share at once, even with work slots free, and another
// tenant's page is admitted meanwhile.
func TestAdmissionPagesTakeTheTenantsShareFirst(t *testing.T) {
	t.Parallel()
	a := newAdmission(t, 4, 4, 1, 100*time.Millisecond)
	_, release, err := a.Admit(t.Context(), "a", true)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Admit(t.Context(), "a", true); !errors.Is(err, limits.ErrAdmissionWait) {
		t.Fatalf("a's second page with its share taken: %v, want ErrAdmissionWait", err)
	}
	_, releaseB, err := a.Admit(t.Context(), "b", true)
	if err != nil {
		t.Fatalf("b's page while a's share is taken: %v", err)
	}
	releaseB()
	if _, _, err := a.Admit(t.Context(), "a", false); err != nil {
		t.Fatalf("a's write while its page share is taken: %v", err)
	}
	release()
}

// TestOutsideGivesTheSlotUp: an outside call runs without the work slot
// its call was admitted with, so another tenant's call is admitted while
// it hangs, and the call has a slot again when Do returns; a tenant's
// outside calls past its cap wait, and one whose context ends is never run.
func TestOutsideGivesTheSlotUp(t *testing.T) {
	t.Parallel()
	a := newAdmission(t, 1, 1, 1, time.Minute)
	outside, err := limits.NewOutside(1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, release, err := a.Admit(t.Context(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	hanging, unhang := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- outside.Do(ctx, "a", func() error { close(hanging); <-unhang; return nil })
	}()
	<-hanging
	_, releaseB, err := a.Admit(t.Context(), "b", false)
	if err != nil {
		t.Fatalf("b's call while a's outside call hangs: %v", err)
	}
	short, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	ran := false
	if err := outside.Do(short, "a", func() error { ran = true; return nil }); !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("a's second outside call past its cap of 1: %v (ran %v), want DeadlineExceeded, not run", err, ran)
	}
	close(unhang)
	waitWaiting(t, a.Work(), 1) // a's call waits to take a slot back for its record
	releaseB()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if running, _ := a.Work().Busy(); running != 1 {
		t.Fatalf("after the outside call: %d running, want a's call holding its slot again", running)
	}
	release()
	if running, _ := a.Work().Busy(); running != 0 {
		t.Fatalf("after a's release: %d running, want 0", running)
	}
}

// TestWorkExhaustedFromAWaitedOutCallToAFreeSlot: the work is exhausted
// (/readyz 503) from a call that waited out the bound without a slot until
// a slot is free with nobody waiting; a call that waits and is served, as
// in contention that moves, does not make it so.
func TestWorkExhaustedFromAWaitedOutCallToAFreeSlot(t *testing.T) {
	t.Parallel()
	// Long enough that b's call is still waiting when the slot is handed
	// over on a loaded machine: at 20 ms it once waited out the bound first.
	const wait = 250 * time.Millisecond
	a := newAdmission(t, 1, 1, 1, wait)
	_, release, err := a.Admit(t.Context(), "a", false)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan func(), 1)
	go func() {
		_, r, err := a.Admit(t.Context(), "b", false)
		if err != nil {
			t.Error(err)
		}
		served <- r
	}()
	for _, waiting := a.Work().Busy(); waiting == 0; _, waiting = a.Work().Busy() {
		time.Sleep(time.Millisecond)
	}
	release() // handed to b's waiting call
	release = <-served
	time.Sleep(2 * wait) // the slot stays taken past the bound, as under steady load
	if _, ok := a.Work().Exhausted(); ok || a.Exhausted() {
		t.Fatal("exhausted after a call waited and was served")
	}
	if _, _, err := a.Admit(t.Context(), "c", false); !errors.Is(err, limits.ErrAdmissionWait) {
		t.Fatalf("c's call: %v, want ErrAdmissionWait", err)
	}
	if !a.Exhausted() {
		t.Fatal("not exhausted right after a call waited out the bound")
	}
	release()
	if _, ok := a.Work().Exhausted(); ok || a.Exhausted() {
		t.Fatal("still exhausted with the slot free")
	}
}
