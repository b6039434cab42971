package limits_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// BenchmarkNoisyNeighbour models issue 10's finding: tenant A floods writes
// from 200 goroutines while tenant B makes paced writes, both through a
// shared pool of 20 "connections" where each write holds one for 2ms (the
// database pool). It reports B's median and p99 latency (admission plus
// queueing plus work) with A idle, with A flooding and no limiter, and with
// A flooding behind the default limits (50 writes/s, burst 100, 64 in
// flight). Run with -benchtime=200x: B is paced under its own rate.
func BenchmarkNoisyNeighbour(b *testing.B) {
	for _, tc := range []struct {
		name    string
		flood   bool
		limited bool
	}{
		{"Unloaded", false, true},
		{"FloodUnlimited", true, false},
		{"FloodLimited", true, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := limits.New(limits.Config{WritesPerSecond: 50, ReadsPerSecond: 200})
			if err != nil {
				b.Fatal(err)
			}
			pool := make(chan struct{}, 20)
			// write runs one write for tenant through the limiter (when on)
			// and the pool, and reports whether it was admitted.
			write := func(tenant string) (bool, time.Duration) {
				if tc.limited {
					release, wait, ok := l.Acquire(tenant)
					if !ok {
						return false, wait
					}
					defer release()
					if ok, wait := l.Allow(tenant, limits.Write); !ok {
						return false, wait
					}
				}
				pool <- struct{}{}
				time.Sleep(2 * time.Millisecond)
				<-pool
				return true, 0
			}

			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			if tc.flood {
				for range 200 {
					wg.Go(func() {
						for ctx.Err() == nil {
							if ok, wait := write("a"); !ok {
								// A polite retry after the named wait; a
								// hostile client gains nothing by retrying
								// sooner, it is refused again at once.
								time.Sleep(wait)
							}
						}
					})
				}
				time.Sleep(100 * time.Millisecond) // let the flood fill the pool
			}

			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				if ok, _ := write("b"); !ok {
					b.Fatal("tenant b was refused although it stays under its rate")
				}
				lat = append(lat, time.Since(start))
				time.Sleep(25 * time.Millisecond) // 40 writes/s, under b's 50/s
			}
			cancel()
			wg.Wait()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkAllowManyTenants measures the limiter's own cost per request
// with many tenants (the map and LRU bookkeeping under contention).
func BenchmarkAllowManyTenants(b *testing.B) {
	l, err := limits.New(limits.Config{WritesPerSecond: 1e9, ReadsPerSecond: 1e9})
	if err != nil {
		b.Fatal(err)
	}
	tenants := make([]string, 1000)
	for i := range tenants {
		tenants[i] = fmt.Sprintf("tenant-%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			t := tenants[i%len(tenants)]
			release, _, _ := l.Acquire(t)
			l.Allow(t, limits.Write)
			if release != nil {
				release()
			}
			i++
		}
	})
}
