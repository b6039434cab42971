package webhooks

import (
	"testing"
	"time"
)

func TestBackoffDoublesFromRetryMinWithBoundedJitterAndACap(t *testing.T) {
	t.Parallel()
	s := &Service{opts: Options{RetryMin: 5 * time.Second, RetryMax: time.Hour}.withDefaults()}
	for n := 1; n <= 12; n++ {
		base := min(5*time.Second<<(n-1), time.Hour)
		for range 50 {
			d := s.backoff(n)
			if d < base || d > base+base/4 {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, base, base+base/4)
			}
		}
	}
}

func TestOptionsDefaultsFollowTheContract(t *testing.T) {
	t.Parallel()
	o := Options{}.withDefaults()
	if o.RetryMin != 5*time.Second || o.MaxAttempts != 12 {
		t.Errorf("defaults RetryMin %v, MaxAttempts %d; docs/contract.md#webhooks and docs/webhooks.md say 5s and 12", o.RetryMin, o.MaxAttempts)
	}
}
