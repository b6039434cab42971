package tracked_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestTrackedCreateManyCallers sends one tracked create from 16 goroutines
// at once, with one operation_id: whatever each hears, the tracker gets one
// issue and ticketd one ticket, and no caller hears success for another
// ticket or a clean failure.
func TestTrackedCreateManyCallers(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		for _, fault := range []githubtest.Fault{0, githubtest.SlowCreate} {
			t.Run("Fault"+itoa(int64(fault)), func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				if fault != 0 {
					e.gh.FailCreates(fault)
				}
				id := newID()
				const callers = 16
				var wg sync.WaitGroup
				results := make([]tickets.CreateResult, callers)
				errs := make([]error, callers)
				start := make(chan struct{})
				for i := range callers {
					wg.Go(func() {
						<-start
						results[i], errs[i] = e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Once"))
					})
				}
				close(start)
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						unsettled(t, err)
						continue
					}
					if results[i].Ticket.ExternalID != repo+"#1" {
						t.Errorf("caller %d: ticket %+v; want the one issue", i, results[i].Ticket)
					}
				}
				res := e.eventually(t, id, ghTicket("Once"), 10*time.Second)
				if n, m := e.gh.CreateRequests(), len(e.markedIssues(id)); n != 1 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
				}
				page, err := e.svc.ListTickets(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, tickets.ListTicketsParams{ProjectID: "gh"})
				if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != res.Ticket.ID {
					t.Fatalf("tickets = %+v, %v; want the one", page.Tickets, err)
				}
			})
		}
	})
}

// TestTrackedCreateDuplicateFoundWithoutAnOperator: a tracker that files two
// issues for one request is caught by the verification pass the create
// schedules one settle window after it succeeds.
func TestTrackedCreateDuplicateFoundWithoutAnOperator(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newTracked(t, d, true)
		e.gh.FailCreates(githubtest.DuplicateCreate)
		id := newID()
		res, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Twice"))
		if err != nil || res.Ticket.ExternalID != repo+"#1" {
			t.Fatalf("create = %+v, %v", res.Ticket, err)
		}
		st := e.waitFor(t, id, func(st tickets.OperationStatus) bool { return len(st.Downstream.Duplicates) == 1 })
		issues := e.markedIssues(id)
		if len(issues) != 2 || issues[0].State != "open" || issues[1].State != "closed" || st.Downstream.ExternalID != repo+"#1" || !st.Downstream.Duplicates[0].Closed {
			t.Fatalf("issues %+v, downstream %+v; want #2 closed as the duplicate of #1", issues, st.Downstream)
		}
		e.waitFor(t, id, func(st tickets.OperationStatus) bool { return st.Downstream.NextCheckAt == nil })
		again, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Twice"))
		if err != nil || !again.Replayed || again.Ticket.ID != res.Ticket.ID || again.Ticket.ExternalID != repo+"#1" {
			t.Fatalf("retry = %+v, %v; want the one ticket, mirroring #1", again, err)
		}
	})
}
