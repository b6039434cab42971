package tickets_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

func subTask(tb testing.TB, svc *tickets.Service, tenant, opID, parent string) (tickets.CreateResult, error) {
	tb.Helper()
	n := printerTicket()
	n.Parent = parent
	return svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(opID), n)
}

func reparent(tb testing.TB, svc *tickets.Service, tenant, opID string, tk tickets.Ticket, parent string) (tickets.UpdateResult, error) {
	tb.Helper()
	return svc.UpdateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(opID), tk.Key,
		tickets.TicketUpdate{Parent: &parent})
}

func childKeys(tb testing.TB, svc *tickets.Service, tenant string, tk tickets.Ticket) (string, []string) {
	tb.Helper()
	parent, children, err := svc.Family(context.Background(), tenant, tk.ID)
	if err != nil {
		tb.Fatal(err)
	}
	if int(children.Count) != len(children.Keys) {
		tb.Fatalf("children of %s: count %d, keys %v", tk.Key, children.Count, children.Keys)
	}
	if parent == nil {
		return "", children.Keys
	}
	return parent.Key, children.Keys
}

func TestSubTasks(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		top := newTicket(t, svc, tenantA)

		t.Run("ASubTaskShowsOnItsParentAndInItsList", func(t *testing.T) {
			op := newID()
			child, err := subTask(t, svc, tenantA, op, strings.ToLower(top.Key))
			if err != nil {
				t.Fatal(err)
			}
			if p, _ := childKeys(t, svc, tenantA, child.Ticket); p != top.Key {
				t.Errorf("parent of %s = %q, want %s", child.Ticket.Key, p, top.Key)
			}
			if _, keys := childKeys(t, svc, tenantA, top); len(keys) != 1 || keys[0] != child.Ticket.Key {
				t.Errorf("children of %s = %v", top.Key, keys)
			}
			page, err := svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, tickets.ListTicketsParams{Parent: top.ID.String()})
			if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != child.Ticket.ID {
				t.Errorf("list(parent) = %+v, %v", page.Tickets, err)
			}
			retry, err := subTask(t, svc, tenantA, op, top.ID.String())
			if err != nil || !retry.Replayed || retry.Ticket.ID != child.Ticket.ID {
				t.Errorf("retry by UUID = %+v, %v; want the same ticket replayed", retry, err)
			}
			if _, err := subTask(t, svc, tenantA, op, newTicket(t, svc, tenantA).Key); !errors.Is(err, operations.ErrConflict) {
				t.Errorf("same operation_id, another parent: %v, want a conflict", err)
			}
		})

		t.Run("DetachWithNullAndARetryReplays", func(t *testing.T) {
			child, err := subTask(t, svc, tenantA, newID(), top.Key)
			if err != nil {
				t.Fatal(err)
			}
			op := newID()
			res, err := reparent(t, svc, tenantA, op, child.Ticket, "")
			if err != nil || res.Changes["parent"].From != top.Key || res.Changes["parent"].To != nil || res.Version != 2 {
				t.Fatalf("detach = %+v, %v", res, err)
			}
			if p, _ := childKeys(t, svc, tenantA, child.Ticket); p != "" {
				t.Errorf("parent after detach = %q", p)
			}
			retry, err := reparent(t, svc, tenantA, op, child.Ticket, "")
			if err != nil || !retry.Replayed || retry.Changes["parent"].From != top.Key {
				t.Errorf("retry = %+v, %v", retry, err)
			}
			if _, err := reparent(t, svc, tenantA, op, child.Ticket, top.Key); !errors.Is(err, operations.ErrConflict) {
				t.Errorf("same operation_id, changed parent: %v, want a conflict", err)
			}
		})

		t.Run("ACycleIsRefused", func(t *testing.T) {
			a := newTicket(t, svc, tenantA)
			b, err := subTask(t, svc, tenantA, newID(), a.Key)
			if err != nil {
				t.Fatal(err)
			}
			_, err = reparent(t, svc, tenantA, newID(), a, b.Ticket.Key)
			if !errors.Is(err, tickets.ErrInvalid) || !strings.Contains(err.Error(), "cycle") {
				t.Errorf("a under its own child: %v, want invalid input naming the cycle", err)
			}
			if _, err := reparent(t, svc, tenantA, newID(), a, a.Key); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("a under itself: %v", err)
			}
		})

		t.Run("DepthOverThreeIsRefused", func(t *testing.T) {
			chain := []tickets.Ticket{newTicket(t, svc, tenantA)}
			for range 3 {
				next, err := subTask(t, svc, tenantA, newID(), chain[len(chain)-1].Key)
				if err != nil {
					t.Fatalf("level %d: %v", len(chain), err)
				}
				chain = append(chain, next.Ticket)
			}
			if _, err := subTask(t, svc, tenantA, newID(), chain[3].Key); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("a fifth level: %v, want invalid input", err)
			}
			// A subtree moved under a deep ticket counts its own depth too.
			loose := newTicket(t, svc, tenantA)
			if _, err := subTask(t, svc, tenantA, newID(), loose.Key); err != nil {
				t.Fatal(err)
			}
			if _, err := reparent(t, svc, tenantA, newID(), loose, chain[2].Key); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("a two-level subtree under the third level: %v, want invalid input", err)
			}
			if _, err := reparent(t, svc, tenantA, newID(), loose, chain[1].Key); err != nil {
				t.Errorf("a two-level subtree under the second level: %v", err)
			}
		})

		t.Run("AnotherTenantsParentIsNotFound", func(t *testing.T) {
			theirs := newTicket(t, svc, tenantB)
			if _, err := subTask(t, svc, tenantA, newID(), theirs.ID.String()); !errors.Is(err, tickets.ErrNotFound) {
				t.Errorf("create under another tenant's ticket: %v, want not found", err)
			}
			if _, err := reparent(t, svc, tenantA, newID(), top, theirs.ID.String()); !errors.Is(err, tickets.ErrNotFound) {
				t.Errorf("update under another tenant's ticket: %v, want not found", err)
			}
		})
	})
}

// TestConcurrentOppositeMovesMakeNoCycle moves a under b and b under a at
// once. Each move alone is valid, so when both check before either writes,
// both commit and the pair is its own ancestor. A barrier at the parent's
// UPDATE holds each move until the other arrives there too (or a second has
// passed, as the tree lock keeps the other waiting before its check): one
// move must win and the other be refused as a cycle, not deadlock.
func TestConcurrentOppositeMovesMakeNoCycle(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		a, b := newTicket(t, svc, tenantA), newTicket(t, svc, tenantA)
		holdParentWritesForEachOther(t, d, 2)
		var errs [2]error
		var wg sync.WaitGroup
		wg.Go(func() { _, errs[0] = reparent(t, svc, tenantA, newID(), a, b.Key) })
		wg.Go(func() { _, errs[1] = reparent(t, svc, tenantA, newID(), b, a.Key) })
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, tickets.ErrInvalid) || !strings.Contains(err.Error(), "cycle"):
				t.Errorf("a move: %v, want success or a refused cycle", err)
			}
		}
		aUp, _ := childKeys(t, svc, tenantA, a)
		bUp, _ := childKeys(t, svc, tenantA, b)
		if won != 1 || (aUp == b.Key && bUp == a.Key) {
			t.Errorf("%d moves committed, parents of %s and %s: %q and %q; want one move and no cycle", won, a.Key, b.Key, aUp, bUp)
		}
	})
}

// holdParentWritesForEachOther makes each of the next n statements that set
// a ticket's parent wait, for at most a second, until all n have arrived.
func holdParentWritesForEachOther(tb testing.TB, d *db.DB, n int) {
	tb.Helper()
	var arrived sync.WaitGroup
	arrived.Add(n)
	var seen atomic.Int32
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	err := d.Gorm.Callback().Raw().Before("gorm:raw").Register("test:hold_parent_writes", func(tx *gorm.DB) {
		if !strings.Contains(tx.Statement.SQL.String(), "SET parent_id") || seen.Add(1) > int32(n) {
			return
		}
		arrived.Done()
		select {
		case <-all:
		case <-time.After(time.Second):
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// TestPreviewChecksTheParentAsCreateDoes: a preview resolves the parent as
// the create does, so its fingerprint is the create's (a key and the UUID
// predict a replay of a create made with either), and refuses the parents
// the create refuses, writing nothing.
func TestPreviewChecksTheParentAsCreateDoes(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		ctx := context.Background()
		top := newTicket(t, svc, tenantA)
		op := newID()
		created, err := subTask(t, svc, tenantA, op, top.Key)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range []string{strings.ToLower(top.Key), top.ID.String()} {
			n := printerTicket()
			n.Parent = ref
			p, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(op), n)
			if err != nil || p.Would != tickets.WouldReplay || p.ExistingTicketID != created.Ticket.ID.String() || p.ParentKey != top.Key {
				t.Errorf("preview with parent %q = %+v, %v; want a replay of %s under %s", ref, p, err, created.Ticket.Key, top.Key)
			}
		}

		chain := []tickets.Ticket{top, created.Ticket}
		for len(chain) < 4 {
			next, err := subTask(t, svc, tenantA, newID(), chain[len(chain)-1].Key)
			if err != nil {
				t.Fatal(err)
			}
			chain = append(chain, next.Ticket)
		}
		before := countTickets(t, d, tenantA)
		deep := printerTicket()
		deep.Parent = chain[3].Key
		if _, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(newID()), deep); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("preview under the fourth level: %v, want invalid input", err)
		}
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), deep); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("create under the fourth level: %v, want invalid input", err)
		}
		theirs := printerTicket()
		theirs.Parent = newTicket(t, svc, tenantB).ID.String()
		if _, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(newID()), theirs); !errors.Is(err, tickets.ErrNotFound) {
			t.Errorf("preview under another tenant's ticket: %v, want not found", err)
		}
		if n := countTickets(t, d, tenantA); n != before {
			t.Errorf("tickets %d → %d: a refused preview or create wrote", before, n)
		}
	})
}
