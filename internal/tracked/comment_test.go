package tracked_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// tracked creates a tracker-backed ticket with no fault: issue #1.
func (e *trackedEnv) tracked(t *testing.T) tickets.Ticket {
	t.Helper()
	res, err := e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(newID()), ghTicket("Widget jams"))
	if err != nil || res.Ticket.ExternalID != repo+"#1" {
		t.Fatalf("create = %+v, %v", res.Ticket, err)
	}
	return res.Ticket
}

// markedComments returns the comments on issue #1 carrying id's marker.
func (e *trackedEnv) markedComments(id string) []githubtest.Comment {
	var out []githubtest.Comment
	marker := tracker.ActionMarker(e.tenant, tickets.ActionAddComment, id)
	for _, c := range e.gh.Issues(repo)[0].Comments {
		if strings.Contains(c.Body, marker) {
			out = append(out, c)
		}
	}
	return out
}

// unsettled fails the test on an answer that claims what is not proven:
// a clean failure for what may have happened, or anything but unknown or
// pending while unsettled.
func unsettled(t *testing.T, err error) {
	t.Helper()
	switch {
	case errors.Is(err, operations.ErrFailed), errors.Is(err, tickets.ErrInvalid):
		t.Fatalf("answered a clean failure for something that may have happened: %v", err)
	case !errors.Is(err, operations.ErrOutcomeUnknown) && !errors.Is(err, operations.ErrInProgress):
		t.Fatalf("retry: %v", err)
	}
}

// commentUntil retries the comment until it succeeds or within passes.
func (e *trackedEnv) commentUntil(t *testing.T, id, ref, body string, within time.Duration) tickets.CommentResult {
	t.Helper()
	return untilSettled(t, within, func() (tickets.CommentResult, error) {
		return e.svc.AddComment(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ref, body)
	})
}

func (e *trackedEnv) localComments(t *testing.T, ref string) []tickets.Comment {
	t.Helper()
	page, err := e.svc.ListComments(context.Background(), e.tenant, ref, tickets.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	return page.Comments
}

func TestTrackedComment(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()

		t.Run("DefiniteAnswerMirrorsTheCommentAndRetryReplays", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			tk := e.tracked(t)
			id := newID()
			res, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Seen on line 3.")
			if err != nil || res.Replayed || res.Comment.Body != "Seen on line 3." {
				t.Fatalf("comment = %+v, %v", res, err)
			}
			again, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Seen on line 3.")
			if err != nil || !again.Replayed || again.Comment.ID != res.Comment.ID {
				t.Fatalf("retry = %+v, %v; want the same comment replayed", again, err)
			}
			if n, m, l := e.gh.CommentRequests(), len(e.markedComments(id)), len(e.localComments(t, tk.Key)); n != 1 || m != 1 || l != 1 {
				t.Fatalf("comment requests %d, marked comments %d, local comments %d; want 1, 1, 1", n, m, l)
			}
			st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id))
			if err != nil || st.CommentID == nil || *st.CommentID != res.Comment.ID || st.Downstream.Status != tickets.DownstreamSucceeded ||
				!strings.HasPrefix(st.Downstream.ExternalID, repo+"#1/comments/") || !strings.Contains(st.Downstream.ExternalURL, "#issuecomment-") {
				t.Fatalf("status = %+v %+v, %v", st, st.Downstream, err)
			}
		})

		for _, fault := range []githubtest.Fault{githubtest.DropAfterCreate, githubtest.BadGatewayAfterCreate, githubtest.SlowCreate} {
			t.Run("UnansweredCommentIsUnknownThenFoundWithoutResending", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				tk := e.tracked(t)
				e.gh.FailComments(fault)
				id := newID()
				if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Lost answer"); !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("first call: %v; want outcome unknown", err)
				}
				if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Lost answer"); err != nil {
					unsettled(t, err) // at once: inside the settle window, nothing is sent again
				}
				res := e.commentUntil(t, id, tk.Key, "Lost answer", 10*time.Second)
				if !res.Replayed {
					t.Errorf("retry = %+v; want the comment an earlier call made", res)
				}
				if n, m, l := e.gh.CommentRequests(), len(e.markedComments(id)), len(e.localComments(t, tk.Key)); n != 1 || m != 1 || l != 1 {
					t.Errorf("comment requests %d, marked comments %d, local comments %d; want 1, 1, 1", n, m, l)
				}
			})
		}

		for _, fault := range []githubtest.Fault{githubtest.SecondaryRateLimit, githubtest.TooManyRequests} {
			t.Run("RateLimitedCommentIsPendingThenSent", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				tk := e.tracked(t)
				e.gh.FailComments(fault)
				id := newID()
				if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Limited"); !errors.Is(err, operations.ErrInProgress) {
					t.Fatalf("first call: %v; want pending", err)
				}
				e.commentUntil(t, id, tk.Key, "Limited", 10*time.Second)
				if n, m := e.gh.CommentRequests(), len(e.markedComments(id)); n != 2 || m != 1 {
					t.Errorf("comment requests %d, marked comments %d; want 2 (one refused) and 1", n, m)
				}
			})
		}

		t.Run("LaggingListDuplicateIsDetectedDeletedAndReported", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			tk := e.tracked(t)
			e.gh.FailComments(githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			id := newID()
			if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Lagging"); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			e.commentUntil(t, id, tk.Key, "Lagging", 10*time.Second)
			if m := len(e.markedComments(id)); m != 2 {
				t.Fatalf("after the re-send: %d marked comments; want the two the lagging list let through", m)
			}
			e.gh.LagLists(0)
			st, err := e.svc.ReconcileOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(id), "")
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			left := e.markedComments(id)
			ds := st.Downstream
			if len(left) != 1 || len(ds.Duplicates) != 1 || !ds.Duplicates[0].Closed || ds.Duplicates[0].KeptID != ds.ExternalID ||
				!strings.HasSuffix(ds.ExternalID, "/comments/"+itoa(left[0].ID)) {
				t.Fatalf("left %+v, downstream %+v; want the older kept and the younger deleted and reported", left, ds)
			}
			if l := len(e.localComments(t, tk.Key)); l != 1 {
				t.Errorf("local comments = %d, want 1", l)
			}
		})

		t.Run("DuplicateTheTrackerLetThroughIsDeletedByTheJob", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, true)
			tk := e.tracked(t)
			e.gh.FailComments(githubtest.DuplicateCreate)
			id := newID()
			if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Twice"); err != nil {
				t.Fatalf("comment: %v", err)
			}
			st := e.waitFor(t, id, func(st tickets.OperationStatus) bool {
				return len(e.markedComments(id)) == 1 && len(st.Downstream.Duplicates) == 1
			})
			if !st.Downstream.Duplicates[0].Closed || !strings.Contains(historyText(st), "found and deleted") {
				t.Fatalf("downstream %+v, history %s", st.Downstream, historyText(st))
			}
		})

		t.Run("OperatorResolvesAndRetriesAnswerTheFinding", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			tk := e.tracked(t)
			e.gh.FailComments(githubtest.DropAfterCreate, githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			done, gone := newID(), newID()
			for _, id := range []string{done, gone} {
				if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), tk.Key, "Resolve "+id); !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("comment: %v; want outcome unknown", err)
				}
			}
			ext := repo + "#1/comments/" + itoa(e.markedComments(done)[0].ID)
			st, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(done), "", tickets.Resolution{Outcome: "succeeded", ExternalID: ext, Reason: "I see it on the issue"})
			if err != nil || st.Record.Status != operations.StatusSucceeded || st.Downstream.ExternalID != ext || st.CommentID == nil {
				t.Fatalf("resolve: %+v, %v", st, err)
			}
			res, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(done), tk.Key, "Resolve "+done)
			if err != nil || !res.Replayed || res.Comment.ID != *st.CommentID {
				t.Fatalf("retry after resolve = %+v, %v", res, err)
			}
			if _, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(gone), "", tickets.Resolution{Outcome: "not_created", Reason: "checked by hand"}); err != nil {
				t.Fatalf("resolve not_created: %v", err)
			}
			if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(gone), tk.Key, "Resolve "+gone); !errors.Is(err, operations.ErrFailed) {
				t.Fatalf("retry after not_created: %v; want the recorded finding", err)
			}
			if n := e.gh.CommentRequests(); n != 2 {
				t.Errorf("comment requests = %d, want 2", n)
			}
		})
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// waitFor polls id's status until ok, for jobs that settle on their own.
func (e *trackedEnv) waitFor(t *testing.T, id string, ok func(tickets.OperationStatus) bool) tickets.OperationStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, err := e.svc.GetOperation(context.Background(), e.tenant, ticketstest.OpID(id))
		if err != nil {
			t.Fatal(err)
		}
		if st.Downstream != nil && ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reached within 15s: %+v %+v", st.Record, st.Downstream)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func historyText(st tickets.OperationStatus) string {
	var b strings.Builder
	for _, h := range st.History {
		b.WriteString(h.Kind + ": " + h.Detail + "\n")
	}
	return b.String()
}
