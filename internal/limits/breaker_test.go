package limits

import (
	"sync"
	"testing"
	"time"
)

// clock is a test's hand-moved time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newBreakers(t *testing.T, failures int, coolDown time.Duration) (*Breakers, *clock) {
	t.Helper()
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := NewBreakers(failures, coolDown, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return b, c
}

// send asks b for key and, if allowed, ends the request with v.
func send(t *testing.T, b *Breakers, key string, v Verdict) (wait time.Duration, ok bool) {
	t.Helper()
	done, wait, ok := b.Allow(key)
	if ok {
		done(v)
	}
	return wait, ok
}

func mustSend(t *testing.T, b *Breakers, key string, v Verdict, why string) {
	t.Helper()
	if wait, ok := send(t, b, key, v); !ok {
		t.Fatalf("%s: refused (wait %s), want sent", why, wait)
	}
}

func mustRefuse(t *testing.T, b *Breakers, key string, want time.Duration, why string) {
	t.Helper()
	if wait, ok := send(t, b, key, Answered); ok || wait != want {
		t.Fatalf("%s: sent %v wait %s, want refused with wait %s", why, ok, wait, want)
	}
}

// TestBreakerOpensAfterFailuresInARow: unanswered requests in a row open
// the breaker for the cool-down; an answer (a refusal is one) or a request
// that says nothing about the host in between does not count, and another
// key is its own.
func TestBreakerOpensAfterFailuresInARow(t *testing.T) {
	t.Parallel()
	b, c := newBreakers(t, 3, 30*time.Second)
	mustSend(t, b, "a", Unanswered, "first failure")
	mustSend(t, b, "a", Unanswered, "second failure")
	mustSend(t, b, "a", Answered, "an answer")
	mustSend(t, b, "a", Unanswered, "first failure after the answer")
	mustSend(t, b, "a", Unjudged, "a request the caller gave up")
	mustSend(t, b, "a", Unanswered, "second failure after the answer")
	mustSend(t, b, "a", Unanswered, "third failure in a row")
	mustRefuse(t, b, "a", 30*time.Second, "open")
	mustSend(t, b, "b", Answered, "another host")
	c.add(20 * time.Second)
	mustRefuse(t, b, "a", 10*time.Second, "open, 20s into the cool-down")
}

// TestBreakerHalfOpenLetsOneProbe: after the cool-down one probe goes and
// the rest wait for it; an unanswered probe opens the breaker for another
// cool-down, an answered one closes it.
func TestBreakerHalfOpenLetsOneProbe(t *testing.T) {
	t.Parallel()
	b, c := newBreakers(t, 1, time.Minute)
	mustSend(t, b, "a", Unanswered, "the failure that opens it")
	c.add(time.Minute)

	probe, _, ok := b.Allow("a")
	if !ok {
		t.Fatal("the first request after the cool-down was refused, want it sent as the probe")
	}
	mustRefuse(t, b, "a", time.Minute, "beside the probe")
	probe(Unanswered)
	mustRefuse(t, b, "a", time.Minute, "after an unanswered probe")

	c.add(time.Minute)
	probe, _, ok = b.Allow("a")
	if !ok {
		t.Fatal("the probe after the second cool-down was refused")
	}
	probe(Unjudged)
	probe, _, ok = b.Allow("a")
	if !ok {
		t.Fatal("after a probe that said nothing about the host, another probe was refused")
	}
	probe(Answered)
	for range 3 {
		mustSend(t, b, "a", Answered, "closed after an answered probe")
	}
	mustSend(t, b, "a", Unanswered, "one failure after closing")
	mustRefuse(t, b, "a", time.Minute, "a failure count of 1 opens it again")
}

// TestBreakerIgnoresLateAnswers: requests allowed before the breaker
// opened and answered after do not judge a later state: neither while it
// is open nor while its probe is out; only the probe does.
func TestBreakerIgnoresLateAnswers(t *testing.T) {
	t.Parallel()
	b, c := newBreakers(t, 2, time.Minute)
	var late []func(Verdict)
	for range 2 {
		done, _, ok := b.Allow("a")
		if !ok {
			t.Fatal("closed breaker refused")
		}
		late = append(late, done)
	}
	mustSend(t, b, "a", Unanswered, "first failure")
	mustSend(t, b, "a", Unanswered, "second failure")
	late[0](Answered)
	mustRefuse(t, b, "a", time.Minute, "open after a late answer from before it opened")
	c.add(time.Minute)
	probe, _, ok := b.Allow("a")
	if !ok {
		t.Fatal("probe refused")
	}
	late[1](Answered)
	mustRefuse(t, b, "a", time.Minute, "beside the probe after a late answer from before it opened")
	probe(Answered)
	probe(Unanswered) // a second call of done is a no-op
	mustSend(t, b, "a", Answered, "closed")
}

func TestNewBreakersWantsPositiveSettings(t *testing.T) {
	t.Parallel()
	if _, err := NewBreakers(0, time.Second, nil); err == nil {
		t.Error("0 failures accepted")
	}
	if _, err := NewBreakers(1, 0, nil); err == nil {
		t.Error("0 cool-down accepted")
	}
}
