package mcptools

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/limits"
)

// pageAdmission is an Admission with total page slots, share per tenant,
// and work slots enough that only the page slots hold a list back.
func pageAdmission(tb testing.TB, total, share int) *limits.Admission {
	tb.Helper()
	work, err := limits.NewWork(64, 64)
	if err != nil {
		tb.Fatal(err)
	}
	pages, err := limits.NewSlots(total, share)
	if err != nil {
		tb.Fatal(err)
	}
	a, err := limits.NewAdmission(work, pages, time.Minute)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

// TestAdmitCapsConcurrentLists: however many list calls arrive at once,
// no more than the bound build pages together; other tools are not held.
func TestAdmitCapsConcurrentLists(t *testing.T) {
	t.Parallel()
	const bound, callers = 3, 24
	var running, peak atomic.Int32
	next := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond) // long enough for the callers to pile up
		running.Add(-1)
		return &mcp.CallToolResult{}, nil
	}
	h := admit(pageAdmission(t, bound, bound), nil)(next)
	call := func(name string) error {
		_, err := h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name}})
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		name := ToolListTickets
		if i%2 == 1 {
			name = ToolListComments
		}
		wg.Go(func() { errs <- call(name) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a bounded list call failed: %v", err)
		}
	}
	if got := peak.Load(); got > bound {
		t.Errorf("%d list calls ran at once, want at most %d", got, bound)
	}

	// A caller that gives up while waiting leaves without a slot.
	held := make(chan struct{})
	release := make(chan struct{})
	blocking := admit(pageAdmission(t, 1, 1), nil)(func(_ context.Context, _ string, req mcp.Request) (mcp.Result, error) {
		if req.(*mcp.CallToolRequest).Params.Name == ToolListTickets {
			close(held)
			<-release
		}
		return &mcp.CallToolResult{}, nil
	})
	list := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListTickets}}
	done := make(chan error, 1)
	go func() { _, err := blocking(context.Background(), "tools/call", list); done <- err }()
	<-held
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := blocking(ctx, "tools/call", list); err == nil {
		t.Error("a cancelled waiter got a page slot")
	}
	// Tools other than lists are never held behind the bound.
	if _, err := blocking(ctx, "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolGetTicket}}); err != nil {
		t.Errorf("get_ticket waited behind the list bound: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestAdmitSharesPageSlotsOutPerTenant: a tenant holding its share of the
// page slots waits behind itself, and another tenant's list runs beside it.
func TestAdmitSharesPageSlotsOutPerTenant(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 8), make(chan struct{})
	h := admit(pageAdmission(t, 4, 2), nil)(func(ctx context.Context, _ string, _ mcp.Request) (mcp.Result, error) {
		entered <- struct{}{}
		if p, _ := authn.PrincipalFromContext(ctx); p.Tenant == "hostile" {
			<-release
		}
		return &mcp.CallToolResult{}, nil
	})
	list := func(ctx context.Context, tenant string) error {
		ctx = authn.ContextWithPrincipal(ctx, authn.Principal{Tenant: tenant})
		_, err := h(ctx, "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: ToolListTickets}})
		return err
	}
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { _ = list(context.Background(), "hostile") })
	}
	<-entered
	<-entered
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := list(short, "hostile"); err == nil {
		t.Error("the hostile tenant's third list ran beside its two, past its share of 2")
	}
	if err := list(context.Background(), "other"); err != nil {
		t.Errorf("another tenant's list beside the hostile tenant's full share: %v", err)
	}
	close(release)
	wg.Wait()
}
