package limits

import (
	"errors"
	"fmt"
	"sync"
)

// Bodies bounds the request body bytes held at once: each tenant's share
// first, then the budget all tenants share. A tenant that stalls many
// uploads fills its own share and is refused; the rest of the budget stays
// for the others, so only several tenants together can spend it (and then
// Spent says so, for readiness). Bytes are taken as they are read, not as a
// request declares them, so a stalled upload holds only what it has sent.
// It is safe for concurrent use.
type Bodies struct {
	mu      sync.Mutex
	limit   int64
	share   int64
	margin  int64
	used    int64
	tenants map[string]int64 // bytes held per tenant; an entry goes at 0
}

// NewBodies returns a Bodies admitting up to limit bytes at once, of which
// one tenant may hold up to share. Spent reports true once less than margin
// bytes are free: margin is the largest body, which might then be refused.
func NewBodies(limit, share, margin int64) (*Bodies, error) {
	switch {
	case limit <= 0:
		return nil, errors.New("limits: the body byte budget must be positive")
	case share <= 0 || share > limit:
		return nil, fmt.Errorf("limits: a tenant's body share must be positive and at most the budget %d (got %d)", limit, share)
	case margin < 0 || margin > limit:
		return nil, fmt.Errorf("limits: the readiness margin must be between 0 and the budget %d (got %d)", limit, margin)
	}
	return &Bodies{limit: limit, share: share, margin: margin, tenants: make(map[string]int64)}, nil
}

// Refusal says which budget refused bytes.
type Refusal int

const (
	// Admitted: nothing refused.
	Admitted Refusal = iota
	// TenantShare: the tenant holds its whole share; it alone must wait.
	TenantShare
	// Global: the budget all tenants share is spent.
	Global
)

// Hold is one request's bytes in a Bodies. It is not safe for concurrent
// use: one request reads its body from one goroutine.
type Hold struct {
	b      *Bodies
	tenant string
	held   int64
}

// Hold starts counting a request of tenant; call Release exactly once when
// the body is no longer held.
func (b *Bodies) Hold(tenant string) *Hold { return &Hold{b: b, tenant: tenant} }

// Take adds n bytes to the hold, from the tenant's share and then from the
// global budget. When either cannot cover them it takes nothing and says
// which refused.
func (h *Hold) Take(n int64) Refusal {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case n < 0 || b.tenants[h.tenant]+n > b.share:
		return TenantShare
	case b.used+n > b.limit:
		return Global
	}
	b.tenants[h.tenant] += n
	b.used += n
	h.held += n
	return Admitted
}

// Release gives back everything the hold took. A second call gives back
// nothing.
func (h *Hold) Release() {
	b := h.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= h.held
	if left := b.tenants[h.tenant] - h.held; left > 0 {
		b.tenants[h.tenant] = left
	} else {
		delete(b.tenants, h.tenant)
	}
	h.held = 0
}

// Spent reports whether less than the margin is free: a full-size body
// might be refused now, so a load balancer should send traffic elsewhere.
func (b *Bodies) Spent() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limit-b.used < b.margin
}
