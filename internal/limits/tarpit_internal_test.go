package limits

import (
	"testing"
	"time"
)

// TestSpreadThinsOutAWave: refusals held alike come back alike, so the
// hold bound is spread over 75–100 % of itself, never past it.
func TestSpreadThinsOutAWave(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := spread(time.Second)
		if d < 750*time.Millisecond || d > time.Second {
			t.Fatalf("spread(1s) = %s, want 750 ms to 1 s", d)
		}
		seen[d.Truncate(50*time.Millisecond)] = true
	}
	if len(seen) < 5 {
		t.Errorf("1000 holds fell into %d of the five 50 ms bands: not spread", len(seen))
	}
	if d := spread(0); d != 0 {
		t.Errorf("spread(0) = %s", d)
	}
}
