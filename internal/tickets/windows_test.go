package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// outcome is what a write answered, reduced to what its retries must repeat.
type outcome struct {
	replayed bool
	result   string // the version an update produced, or the comment's ID
}

// retryableWrite is one of the lifecycle writes under the failure-window
// cases: call performs it (other selects a different input for the same
// intent slot), effect counts what it has applied to a ticket.
type retryableWrite struct {
	name   string
	call   func(ctx context.Context, svc *tickets.Service, tenant, opID, ticketRef string, other bool) (outcome, error)
	effect func(tb testing.TB, d *db.DB, tenant, ticketID string) int64
	// fromStatus reads what GetOperation reports as the operation's result.
	fromStatus func(st tickets.OperationStatus) string
}

var retryableWrites = []retryableWrite{
	{
		name: "UpdateTicket",
		call: func(ctx context.Context, svc *tickets.Service, tenant, opID, ref string, other bool) (outcome, error) {
			st := tickets.StatusResolved
			if other {
				st = tickets.StatusClosed
			}
			res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(opID), ref, tickets.TicketUpdate{Status: &st})
			return outcome{res.Replayed, fmt.Sprint(res.Version)}, err
		},
		effect: func(tb testing.TB, d *db.DB, tenant, ticketID string) int64 {
			return countRows(tb, d, "ticket_events", "tenant_id = ? AND ticket_id = ? AND kind = 'updated'", tenant, ticketID)
		},
		fromStatus: func(st tickets.OperationStatus) string { return fmt.Sprint(st.Version) },
	},
	{
		name: "AddComment",
		call: func(ctx context.Context, svc *tickets.Service, tenant, opID, ref string, other bool) (outcome, error) {
			body := "Replaced the toner; watching it."
			if other {
				body = "Something else entirely."
			}
			res, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(opID), ref, body)
			return outcome{res.Replayed, res.Comment.ID.String()}, err
		},
		effect: func(tb testing.TB, d *db.DB, tenant, ticketID string) int64 {
			return countRows(tb, d, "comments", "tenant_id = ? AND ticket_id = ?", tenant, ticketID)
		},
		fromStatus: func(st tickets.OperationStatus) string {
			if st.CommentID == nil {
				return ""
			}
			return st.CommentID.String()
		},
	},
}

func countRows(tb testing.TB, d *db.DB, table, where string, args ...any) int64 {
	tb.Helper()
	var n int64
	if err := d.Gorm.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

// newTicket creates a fresh ticket for one case and returns it.
func newTicket(tb testing.TB, svc *tickets.Service, tenant string) tickets.Ticket {
	tb.Helper()
	res, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(newID()), printerTicket())
	if err != nil {
		tb.Fatal(err)
	}
	return res.Ticket
}

type cancelKey struct{}

// cancelOnEventInsert makes every write whose context carries a cancel
// function (under cancelKey) call it as its event row is inserted, by GORM's
// Create or in a raw statement (PostgreSQL's update and its event are one):
// the caller goes away in the middle of the transaction, deterministically.
func cancelOnEventInsert(tb testing.TB, d *db.DB) {
	tb.Helper()
	cancelCaller := func(tx *gorm.DB, inserts bool) {
		if cancel, ok := tx.Statement.Context.Value(cancelKey{}).(context.CancelFunc); ok && inserts {
			cancel()
		}
	}
	err := d.Gorm.Callback().Create().Before("gorm:create").Register("test:cancel_caller", func(tx *gorm.DB) {
		cancelCaller(tx, tx.Statement.Table == "ticket_events")
	})
	if err == nil {
		err = d.Gorm.Callback().Row().Before("gorm:row").Register("test:cancel_caller_raw", func(tx *gorm.DB) {
			cancelCaller(tx, strings.Contains(tx.Statement.SQL.String(), `INSERT INTO "ticket_events"`))
		})
	}
	if err != nil {
		tb.Fatal(err)
	}
}

func TestWriteFailureWindows(t *testing.T) {
	t.Parallel()
	for _, w := range retryableWrites {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
				svc := newService(t, d)
				cancelOnEventInsert(t, d)
				ctx := context.Background()

				t.Run("RetryReplays", func(t *testing.T) {
					tk, id := newTicket(t, svc, tenantA), newID()
					first, err := w.call(ctx, svc, tenantA, id, tk.Key, false)
					if err != nil || first.replayed {
						t.Fatalf("first call = %+v, %v", first, err)
					}
					// By UUID instead of key, and the key in lower case: the same input.
					for _, ref := range []string{tk.ID.String(), "sup-" + tk.Key[4:]} {
						again, err := w.call(ctx, svc, tenantA, id, ref, false)
						if err != nil || !again.replayed || again.result != first.result {
							t.Errorf("retry via %q = %+v, %v; want a replay of %+v", ref, again, err, first)
						}
					}
					if n := w.effect(t, d, tenantA, tk.ID.String()); n != 1 {
						t.Errorf("%d changes applied, want 1", n)
					}
				})

				t.Run("OtherInputConflictsAndWritesNothing", func(t *testing.T) {
					tk, id := newTicket(t, svc, tenantA), newID()
					first, err := w.call(ctx, svc, tenantA, id, tk.Key, false)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := w.call(ctx, svc, tenantA, id, tk.Key, true); !errors.Is(err, operations.ErrConflict) {
						t.Fatalf("other input: %v, want ErrConflict", err)
					}
					// The same input on another ticket is other input too.
					if _, err := w.call(ctx, svc, tenantA, id, newTicket(t, svc, tenantA).Key, false); !errors.Is(err, operations.ErrConflict) {
						t.Fatalf("other ticket: %v, want ErrConflict", err)
					}
					if n := w.effect(t, d, tenantA, tk.ID.String()); n != 1 {
						t.Errorf("%d changes applied, want 1", n)
					}
					st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
					if err != nil || w.fromStatus(st) != first.result {
						t.Errorf("operation = %+v, %v; want the first result %s", st, err, first.result)
					}
				})

				t.Run("ConcurrentDuplicatesApplyOnce", func(t *testing.T) {
					tk, id := newTicket(t, svc, tenantA), newID()
					const callers = 16
					outs := make([]outcome, callers)
					errs := make([]error, callers)
					var wg sync.WaitGroup
					for i := range callers {
						wg.Go(func() { outs[i], errs[i] = w.call(ctx, svc, tenantA, id, tk.Key, false) })
					}
					wg.Wait()
					applied := 0
					for i := range callers {
						if errs[i] != nil {
							t.Fatalf("caller %d: %v", i, errs[i])
						}
						if outs[i].result != outs[0].result {
							t.Errorf("caller %d got %s, caller 0 got %s", i, outs[i].result, outs[0].result)
						}
						if !outs[i].replayed {
							applied++
						}
					}
					if applied != 1 {
						t.Errorf("%d callers applied the write, want 1", applied)
					}
					if n := w.effect(t, d, tenantA, tk.ID.String()); n != 1 {
						t.Errorf("%d changes applied, want 1", n)
					}
				})

				t.Run("CancelledCallerStillCommits", func(t *testing.T) {
					tk, id := newTicket(t, svc, tenantA), newID()
					callCtx, cancel := context.WithCancel(ctx)
					defer cancel()
					callCtx = context.WithValue(callCtx, cancelKey{}, cancel)
					first, err := w.call(callCtx, svc, tenantA, id, tk.Key, false)
					if callCtx.Err() == nil {
						t.Fatal("the caller was never cancelled: the hook did not fire")
					}
					if err != nil {
						t.Fatalf("call whose caller went away mid-write: %v", err)
					}
					retry, err := w.call(ctx, svc, tenantA, id, tk.Key, false)
					if err != nil || !retry.replayed || retry.result != first.result {
						t.Errorf("retry = %+v, %v; want a replay of %+v", retry, err, first)
					}
					if n := w.effect(t, d, tenantA, tk.ID.String()); n != 1 {
						t.Errorf("%d changes applied, want 1", n)
					}
				})

				t.Run("OtherTenantIsIndependent", func(t *testing.T) {
					a, b, id := newTicket(t, svc, tenantA), newTicket(t, svc, tenantB), newID()
					if _, err := w.call(ctx, svc, tenantA, id, a.Key, false); err != nil {
						t.Fatal(err)
					}
					if _, err := svc.GetOperation(ctx, tenantB, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
						t.Errorf("tenant B sees A's operation: %v", err)
					}
					// B cannot reach A's ticket by its UUID...
					if _, err := w.call(ctx, svc, tenantB, id, a.ID.String(), false); !errors.Is(err, tickets.ErrNotFound) {
						t.Errorf("tenant B writes to A's ticket: %v, want ErrNotFound", err)
					}
					// ...and its own use of the ID, with other input, is its own operation.
					res, err := w.call(ctx, svc, tenantB, id, b.Key, true)
					if err != nil || res.replayed {
						t.Fatalf("tenant B = %+v, %v; want its own fresh write", res, err)
					}
					if na, nb := w.effect(t, d, tenantA, a.ID.String()), w.effect(t, d, tenantB, b.ID.String()); na != 1 || nb != 1 {
						t.Errorf("changes applied: A %d, B %d; want 1 each", na, nb)
					}
				})
			})
		})
	}
}

// TestWriteCommitReplyLost cuts the connection after COMMIT reached
// PostgreSQL and was applied, before its reply: the answer must be
// "unknown", the status lookup must find the write, and a retry replays it.
func TestWriteCommitReplyLost(t *testing.T) {
	t.Parallel()
	for _, w := range retryableWrites {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			d, proxy := dbtest.PostgresViaProxy(t)
			svc := newService(t, d)
			ctx := context.Background()
			tk, id := newTicket(t, svc, tenantA), newID()

			fired := proxy.DropReplyAfter(dbtest.PostgresCommit)
			_, err := w.call(ctx, svc, tenantA, id, tk.Key, false)
			<-fired
			if !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("err = %v, want ErrOutcomeUnknown", err)
			}
			st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
			if err != nil || st.Record.Status != operations.StatusSucceeded || st.TicketID == nil || *st.TicketID != tk.ID || w.fromStatus(st) == "" {
				t.Fatalf("status after the lost reply = %+v, %v; want succeeded on %s with its result", st, err, tk.ID)
			}
			retry, err := w.call(ctx, svc, tenantA, id, tk.Key, false)
			if err != nil || !retry.replayed || retry.result != w.fromStatus(st) {
				t.Fatalf("retry = %+v, %v; want a replay of %s", retry, err, w.fromStatus(st))
			}
			if n := w.effect(t, d, tenantA, tk.ID.String()); n != 1 {
				t.Errorf("%d changes applied, want 1", n)
			}
		})
	}
}
