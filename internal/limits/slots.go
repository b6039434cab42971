package limits

import (
	"context"
	"fmt"
	"sync"
)

// Slots bounds how many of an expensive kind of work (building a list page)
// run at once: at most share for one tenant, and at most total for all.
// Waiters queue, first on their tenant's share and then on the total, so a
// tenant running many at once waits behind itself and holds no more than
// its share of the total. It is safe for concurrent use.
type Slots struct {
	total chan struct{}
	share int

	mu      sync.Mutex
	tenants map[string]*tenantSlots // an entry goes when no one holds or waits on it
}

type tenantSlots struct {
	slots chan struct{}
	refs  int
}

// NewSlots returns Slots with total slots, share per tenant.
func NewSlots(total, share int) (*Slots, error) {
	if total <= 0 || share <= 0 || share > total {
		return nil, fmt.Errorf("limits: want 0 < share ≤ total slots (got share %d, total %d)", share, total)
	}
	return &Slots{total: make(chan struct{}, total), share: share, tenants: make(map[string]*tenantSlots)}, nil
}

// Acquire waits for one of tenant's slots and then one of the total, or
// until ctx ends (its error is returned and nothing is held). Call release
// exactly once when the work is done.
func (s *Slots) Acquire(ctx context.Context, tenant string) (release func(), err error) {
	s.mu.Lock()
	ts := s.tenants[tenant]
	if ts == nil {
		ts = &tenantSlots{slots: make(chan struct{}, s.share)}
		s.tenants[tenant] = ts
	}
	ts.refs++
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if ts.refs--; ts.refs == 0 {
			delete(s.tenants, tenant)
		}
	}
	select {
	case ts.slots <- struct{}{}:
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
	select {
	case s.total <- struct{}{}:
	case <-ctx.Done():
		<-ts.slots
		drop()
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-s.total
			<-ts.slots
			drop()
		})
	}, nil
}
