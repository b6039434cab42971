package tickets_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/links"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

func link(tb testing.TB, svc *tickets.Service, tenant, opID string, in tickets.LinkChange) (tickets.LinkResult, error) {
	tb.Helper()
	return svc.LinkTickets(context.Background(), tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(opID), in)
}

func linksOf(tb testing.TB, svc *tickets.Service, tenant string, tk tickets.Ticket) []links.Link {
	tb.Helper()
	got, err := svc.TicketLinks(context.Background(), tenant, tk.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

func countLinks(tb testing.TB, d *db.DB, tenant string) int64 {
	tb.Helper()
	var n int64
	if err := d.Gorm.Table("ticket_links").Where("tenant_id = ?", tenant).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestLinkTickets(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		a, b, c := newTicket(t, svc, tenantA), newTicket(t, svc, tenantA), newTicket(t, svc, tenantA)

		t.Run("BothEndsShowItAndARetryReplays", func(t *testing.T) {
			op := newID()
			in := tickets.LinkChange{Ticket: a.Key, Kind: links.Blocks, Target: b.Key}
			first, err := link(t, svc, tenantA, op, in)
			if err != nil || first.Replayed || !first.Changed {
				t.Fatalf("link = %+v, %v", first, err)
			}
			retry, err := link(t, svc, tenantA, op, tickets.LinkChange{Ticket: a.ID.String(), Kind: "Blocks", Target: b.Key})
			if err != nil || !retry.Replayed || !retry.Changed {
				t.Fatalf("retry = %+v, %v; want replayed and changed", retry, err)
			}
			if got := linksOf(t, svc, tenantA, a); len(got) != 1 || got[0].Kind != links.Blocks || got[0].Key != b.Key {
				t.Errorf("links of %s = %+v", a.Key, got)
			}
			if got := linksOf(t, svc, tenantA, b); len(got) != 1 || got[0].Kind != links.BlockedBy || got[0].Key != a.Key {
				t.Errorf("links of %s = %+v, want blocked_by %s", b.Key, got, a.Key)
			}
			page, err := svc.ListEvents(context.Background(), tenantA, b.Key, tickets.ListParams{})
			if err != nil {
				t.Fatal(err)
			}
			last := page.Events[len(page.Events)-1]
			if last.Kind != tickets.EventLinked || last.Changes["link"].To != "blocked_by "+a.Key || last.Version != b.Version {
				t.Errorf("last event of %s = %+v", b.Key, last)
			}
		})

		t.Run("SameIDOtherInputConflicts", func(t *testing.T) {
			op := newID()
			if _, err := link(t, svc, tenantA, op, tickets.LinkChange{Ticket: a.Key, Kind: links.RelatesTo, Target: c.Key}); err != nil {
				t.Fatal(err)
			}
			_, err := link(t, svc, tenantA, op, tickets.LinkChange{Ticket: a.Key, Kind: links.Duplicates, Target: c.Key})
			if !errors.Is(err, operations.ErrConflict) {
				t.Fatalf("err = %v, want conflict", err)
			}
		})

		t.Run("CycleRefused", func(t *testing.T) {
			if _, err := link(t, svc, tenantA, newID(), tickets.LinkChange{Ticket: c.Key, Kind: links.BlockedBy, Target: b.Key}); err != nil {
				t.Fatal(err) // b blocks c
			}
			before := countLinks(t, d, tenantA)
			_, err := link(t, svc, tenantA, newID(), tickets.LinkChange{Ticket: c.Key, Kind: links.Blocks, Target: a.Key})
			want := a.Key + " blocks " + b.Key
			if !errors.Is(err, tickets.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), c.Key+" blocks "+a.Key) {
				t.Fatalf("err = %v, want invalid naming the cycle", err)
			}
			if after := countLinks(t, d, tenantA); after != before {
				t.Errorf("links %d → %d after a refused cycle", before, after)
			}
		})

		t.Run("SelfLinkRefused", func(t *testing.T) {
			_, err := link(t, svc, tenantA, newID(), tickets.LinkChange{Ticket: a.Key, Kind: links.RelatesTo, Target: a.ID.String()})
			if !errors.Is(err, tickets.ErrInvalid) {
				t.Fatalf("err = %v, want invalid", err)
			}
		})

		t.Run("OtherTenantsTargetNotFound", func(t *testing.T) {
			other := newTicket(t, svc, tenantB)
			_, err := link(t, svc, tenantA, newID(), tickets.LinkChange{Ticket: a.Key, Kind: links.RelatesTo, Target: other.ID.String()})
			if !errors.Is(err, tickets.ErrNotFound) {
				t.Fatalf("err = %v, want not found", err)
			}
		})

		t.Run("RemoveUnlinksBothEnds", func(t *testing.T) {
			res, err := link(t, svc, tenantA, newID(), tickets.LinkChange{Ticket: b.Key, Kind: links.BlockedBy, Target: a.Key, Remove: true})
			if err != nil || !res.Changed {
				t.Fatalf("unlink = %+v, %v", res, err)
			}
			for _, l := range linksOf(t, svc, tenantA, a) {
				if l.Key == b.Key {
					t.Errorf("%s still links %s: %+v", a.Key, b.Key, l)
				}
			}
		})
	})
}

func TestConcurrentIdenticalLinksMakeOneLink(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		a, b := newTicket(t, svc, tenantA), newTicket(t, svc, tenantA)
		op := newID()
		var wg sync.WaitGroup
		var mu sync.Mutex
		changed := 0
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := op
				if i%2 == 1 {
					id = newID() // the same link under its own operation
				}
				for {
					res, err := link(t, svc, tenantA, id, tickets.LinkChange{Ticket: a.Key, Kind: links.Blocks, Target: b.Key})
					if errors.Is(err, operations.ErrInProgress) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if res.Changed && !res.Replayed {
						changed++
					}
					mu.Unlock()
					return
				}
			}()
		}
		wg.Wait()
		if n := countLinks(t, d, tenantA); n != 1 || changed != 1 {
			t.Errorf("links = %d, first changes = %d; want 1 and 1", n, changed)
		}
	})
}
