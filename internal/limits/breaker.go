package limits

import (
	"fmt"
	"sync"
	"time"
)

// Breakers is a circuit breaker per key (a tracker host): closed, it lets
// every request go and counts the ones in a row the host left unanswered;
// at failures of them it opens for coolDown and lets none go; then, half
// open, it lets one probe go, which closes it if answered and opens it
// again if not. Its state lives in this process only. It is safe for
// concurrent use.
type Breakers struct {
	failures int
	coolDown time.Duration
	now      func() time.Time

	mu   sync.Mutex
	keys map[string]*breaker // one per key ever asked for: a replica talks to few hosts
}

// Verdict is what a request's answer says about its host.
type Verdict int

// The verdicts a request's end reports.
const (
	// Answered: the host answered (a success, a refusal, a rate limit).
	Answered Verdict = iota
	// Unanswered: the host did not answer (a timeout, a failed
	// connection, a 5xx).
	Unanswered
	// Unjudged: the request says nothing about the host (the caller gave
	// up, or it was refused before it left).
	Unjudged
)

// The states of a breaker.
type breakerState int

const (
	stateClosed breakerState = iota
	stateOpen
	stateHalfOpen
)

type breaker struct {
	state breakerState
	fails int       // unanswered in a row, closed
	until time.Time // open: when a probe may go
	probe bool      // half open: the probe is out
	gen   int       // counts state changes, so a late answer cannot judge a later state
}

// NewBreakers returns Breakers opening after failures unanswered requests
// in a row, for coolDown; now is the clock (time.Now if nil).
func NewBreakers(failures int, coolDown time.Duration, now func() time.Time) (*Breakers, error) {
	if failures <= 0 || coolDown <= 0 {
		return nil, fmt.Errorf("limits: want breaker failures > 0 and cool-down > 0 (got %d, %s)", failures, coolDown)
	}
	if now == nil {
		now = time.Now
	}
	return &Breakers{failures: failures, coolDown: coolDown, now: now, keys: make(map[string]*breaker)}, nil
}

// Allow asks whether a request to key may go. If so, done must be called
// exactly once with what its answer says about the host. If not, wait is
// how long before one may (the rest of the cool-down, or a cool-down while
// the half-open probe is out).
func (b *Breakers) Allow(key string) (done func(Verdict), wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.keys[key]
	if br == nil {
		br = &breaker{}
		b.keys[key] = br
	}
	now := b.now()
	if br.state == stateOpen {
		if left := br.until.Sub(now); left > 0 {
			return nil, left, false
		}
		br.set(stateHalfOpen)
	}
	if br.state == stateHalfOpen {
		if br.probe {
			return nil, b.coolDown, false
		}
		br.probe = true
	}
	gen := br.gen
	var once sync.Once
	return func(v Verdict) { once.Do(func() { b.done(br, gen, v) }) }, 0, true
}

func (b *Breakers) done(br *breaker, gen int, v Verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if br.gen != gen {
		return
	}
	switch {
	case br.state == stateHalfOpen && v == Answered:
		br.set(stateClosed)
	case br.state == stateHalfOpen && v == Unanswered:
		br.trip(b.now().Add(b.coolDown))
	case br.state == stateHalfOpen:
		br.probe = false // another probe may go
	case v == Answered:
		br.fails = 0
	case v == Unanswered:
		if br.fails++; br.fails >= b.failures {
			br.trip(b.now().Add(b.coolDown))
		}
	}
}

func (br *breaker) set(s breakerState) {
	br.state, br.fails, br.probe, br.gen = s, 0, false, br.gen+1
}

func (br *breaker) trip(until time.Time) {
	br.set(stateOpen)
	br.until = until
}
