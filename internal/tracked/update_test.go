package tracked_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// closeAndRename is an update every field of which the issue holds.
func closeAndRename() tickets.TicketUpdate {
	title, st := "Widget jams on Mondays", tickets.StatusClosed
	return tickets.TicketUpdate{Title: &title, Status: &st, AddLabels: []string{"p1"}}
}

// showsUpdate reports whether issue #1 shows closeAndRename.
func (e *trackedEnv) showsUpdate() bool {
	i := e.gh.Issues(repo)[0]
	return i.Title == "Widget jams on Mondays" && i.State == "closed" && slices.Contains(i.Labels, "p1") && slices.Contains(i.Labels, tracker.Label)
}

// updateUntil retries the update until it succeeds or within passes.
func (e *trackedEnv) updateUntil(t *testing.T, id, ref string, u tickets.TicketUpdate, within time.Duration) tickets.UpdateResult {
	t.Helper()
	return untilSettled(t, within, func() (tickets.UpdateResult, error) {
		return e.svc.UpdateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ref, u)
	})
}

func TestTrackedUpdate(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()

		t.Run("DefiniteAnswerEditsTheIssueAndMirrorsIt", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			tk := e.tracked(t)
			id := newID()
			res, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename())
			if err != nil || res.Version != 2 || res.Ticket.Status != tickets.StatusClosed || len(res.Changes) != 3 {
				t.Fatalf("update = %+v, %v", res, err)
			}
			if !e.showsUpdate() || !strings.Contains(e.gh.Issues(repo)[0].Body, tracker.Marker(e.tenant, "")[:20]) {
				t.Fatalf("issue = %+v; want the edit, and the body (with its marker) untouched", e.gh.Issues(repo)[0])
			}
			again, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename())
			if err != nil || !again.Replayed || again.Version != 2 {
				t.Fatalf("retry = %+v, %v; want the update replayed", again, err)
			}
			// Priority has no GitHub counterpart: a local write, no request.
			urgent := tickets.PriorityHigh
			pr, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Priority: &urgent})
			if err != nil || pr.Version != 3 {
				t.Fatalf("priority update = %+v, %v", pr, err)
			}
			desc := "Now with a photo."
			if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Description: &desc}); err != nil {
				t.Fatalf("description update: %v", err)
			}
			if body := e.gh.Issues(repo)[0].Body; !strings.HasPrefix(body, desc+"\n\n<!-- ticketd:operation=") {
				t.Errorf("body = %q; want the new description and the create's marker kept", body)
			}
			if n := e.gh.EditRequests(); n != 2 {
				t.Errorf("edit requests = %d, want 2 (none for the replay or the priority)", n)
			}
			st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id))
			if err != nil || st.Version != 2 || st.Downstream.Status != tickets.DownstreamSucceeded || st.Downstream.ExternalID != repo+"#1" || st.Downstream.Attempts != 1 {
				t.Fatalf("status = %+v %+v, %v", st, st.Downstream, err)
			}
			if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{IfVersion: &res.Version, Title: &desc}); !errors.Is(err, tickets.ErrVersionConflict) {
				t.Errorf("stale if_version: %v; want a version conflict, nothing sent", err)
			}
			// An operator's reconcile of a settled edit only looks: an edit
			// makes nothing that could be doubled, and nothing is re-sent.
			if _, err := e.svc.ReconcileOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(id), ""); err != nil {
				t.Errorf("reconcile of a settled edit: %v", err)
			}
			if _, err := e.svc.BulkUpdateTickets(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), tickets.BulkUpdate{Refs: []string{tk.Key}, Update: tickets.TicketUpdate{Title: &desc}}); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("bulk update of a tracker-backed ticket: %v; want it refused, not applied to the local row alone", err)
			}
			if n := e.gh.EditRequests(); n != 2 {
				t.Errorf("edit requests = %d after a conflict and a refused bulk, want still 2", n)
			}
		})

		for _, fault := range []githubtest.Fault{githubtest.DropAfterCreate, githubtest.BadGatewayAfterCreate, githubtest.SlowCreate} {
			t.Run("UnansweredEditIsUnknownThenFoundWithoutResending", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				tk := e.tracked(t)
				e.gh.FailEdits(fault)
				id := newID()
				if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename()); !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("first call: %v; want outcome unknown", err)
				}
				// Another edit of the ticket waits its turn: a late re-send of
				// the first must never overtake it.
				title := "Overtaking"
				second := newID()
				if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(second), tk.Key, tickets.TicketUpdate{Title: &title}); !errors.Is(err, operations.ErrInProgress) {
					t.Fatalf("second edit while the first is unsettled: %v; want in progress", err)
				}
				if _, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(second)); !errors.Is(err, operations.ErrNotFound) {
					t.Errorf("the refused second edit left a record: %v", err)
				}
				res := e.updateUntil(t, id, tk.Key, closeAndRename(), 10*time.Second)
				if !res.Replayed || res.Version != 2 || !e.showsUpdate() {
					t.Errorf("retry = %+v; want the edit an earlier call made, version 2", res)
				}
				if n := e.gh.EditRequests(); n != 1 {
					t.Errorf("edit requests = %d, want 1", n)
				}
				if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(second), tk.Key, tickets.TicketUpdate{Title: &title}); err != nil {
					t.Errorf("second edit once the first settled: %v", err)
				}
			})
		}

		for _, fault := range []githubtest.Fault{githubtest.SecondaryRateLimit, githubtest.TooManyRequests} {
			t.Run("RateLimitedEditIsPendingThenSent", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				tk := e.tracked(t)
				e.gh.FailEdits(fault)
				id := newID()
				if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename()); !errors.Is(err, operations.ErrInProgress) {
					t.Fatalf("first call: %v; want pending", err)
				}
				if e.showsUpdate() {
					t.Fatal("a rate-limited edit changed the issue")
				}
				res := e.updateUntil(t, id, tk.Key, closeAndRename(), 10*time.Second)
				if res.Version != 2 || !e.showsUpdate() || e.gh.EditRequests() != 2 {
					t.Errorf("update %+v, edit requests %d; want version 2 after 2 requests (one refused)", res, e.gh.EditRequests())
				}
			})
		}

		t.Run("IssueChangedSinceTheLostEditIsLeftToAnOperator", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			tk := e.tracked(t)
			e.gh.FailEdits(githubtest.DropAfterCreate)
			id := newID()
			if _, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename()); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			// Someone on GitHub reopens the issue after ticketd's edit landed:
			// the issue no longer shows it, and a re-send would undo them.
			e.gh.Touch(repo, 1, func(i *githubtest.Issue) { i.State = "open" })
			time.Sleep(settle + 100*time.Millisecond)
			_, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename())
			if !errors.Is(err, operations.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "operator") {
				t.Fatalf("retry after the settle window: %v; want unknown, waiting for an operator", err)
			}
			if n := e.gh.EditRequests(); n != 1 || e.gh.Issues(repo)[0].State != "open" {
				t.Fatalf("edit requests %d, state %s; want no re-send over the person's change", n, e.gh.Issues(repo)[0].State)
			}
			st, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(id), "", tickets.Resolution{Outcome: "succeeded", ExternalID: "#1", Reason: "it landed; Bob reopened it on purpose"})
			if err != nil || st.Record.Status != operations.StatusSucceeded || st.Version != 2 {
				t.Fatalf("resolve: %+v, %v", st, err)
			}
			res, err := e.svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, closeAndRename())
			if err != nil || !res.Replayed || res.Version != 2 {
				t.Fatalf("retry after resolve = %+v, %v; want the resolved outcome", res, err)
			}
		})
	})
}

// TestTrackedWritesAskForApproval: a tracker-backed create or edit passes
// the same approval gate as a local one, before anything is claimed or sent.
func TestTrackedWritesAskForApproval(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newTracked(t, d, false)
		tk := e.tracked(t)
		gate := approval.New(d.Gorm, approval.Options{Policy: approval.Policy{Enabled: true, BulkThreshold: 10},
			PageURL: func(id string) string { return "http://console/approvals/" + id }})
		svc := tickets.NewService(d.Gorm, tickets.Options{Approvals: gate,
			Tracked: e.conn})
		in := ghTicket("Checkout is down")
		in.Priority = tickets.PriorityUrgent
		id := newID()
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), in); !errors.Is(err, approval.ErrRequired) {
			t.Fatalf("urgent tracked create: %v; want approval required", err)
		}
		urgent, title := tickets.PriorityUrgent, "Checkout is down"
		if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Priority: &urgent, Title: &title}); !errors.Is(err, approval.ErrRequired) {
			t.Fatalf("urgent tracked edit: %v; want approval required", err)
		}
		if n, m := e.gh.CreateRequests(), e.gh.EditRequests(); n != 1 || m != 0 {
			t.Errorf("create requests %d, edit requests %d; want only the first ticket's create", n, m)
		}
		if _, err := svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("a create waiting for approval left a record: %v", err)
		}
	})
}
