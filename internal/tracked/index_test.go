package tracked_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// A tracker whose index lags longer than the settle window: the window
// alone would re-send a create or a comment whose answer was lost, and
// make a duplicate. The re-send waits instead until the tracker shows
// ticketd's previous write there, so retries of one operation make one
// issue and one comment, later.

// indexLag is longer than either test's settle window.
const indexLag = 3 * settle / 2

// lagFake is what the test needs of either fake.
type lagFake struct {
	caller                  tickets.Caller
	svc                     *tickets.Service
	project                 string
	failCreate, failComment func()
	issues, comments        func(id string) int // issues or comments carrying id's marker
	creates, commentsSent   func() int
}

func runIndexLag(t *testing.T, f lagFake) {
	ctx := context.Background()
	in := func(title string) tickets.NewTicket {
		return tickets.NewTicket{ProjectID: f.project, Title: title, Description: "Seen in production."}
	}
	first, err := f.svc.CreateTicket(ctx, f.caller, ticketstest.OpID(newID()), in("First"))
	if err != nil {
		t.Fatalf("first create: %v", err)
	}
	if _, err := f.svc.AddComment(ctx, f.caller, ticketstest.OpID(newID()), first.Ticket.ID.String(), "first comment"); err != nil {
		t.Fatalf("first comment: %v", err)
	}
	f.failCreate()
	f.failComment()
	id, cid := newID(), newID()
	if _, err := f.svc.CreateTicket(ctx, f.caller, ticketstest.OpID(id), in("Second")); !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("second create: %v; want outcome unknown", err)
	}
	if _, err := f.svc.AddComment(ctx, f.caller, ticketstest.OpID(cid), first.Ticket.ID.String(), "second comment"); !errors.Is(err, operations.ErrOutcomeUnknown) {
		t.Fatalf("second comment: %v; want outcome unknown", err)
	}
	within := 2*indexLag + 2*settle
	res := untilSettled(t, within, func() (tickets.CreateResult, error) {
		return f.svc.CreateTicket(ctx, f.caller, ticketstest.OpID(id), in("Second"))
	})
	untilSettled(t, within, func() (tickets.CommentResult, error) {
		return f.svc.AddComment(ctx, f.caller, ticketstest.OpID(cid), first.Ticket.ID.String(), "second comment")
	})
	if n, m := f.issues(id), f.creates(); n != 1 || m != 2 {
		t.Errorf("issues of the retried create %d, create requests %d; want 1 and 2", n, m)
	}
	if n, m := f.comments(cid), f.commentsSent(); n != 1 || m != 2 {
		t.Errorf("comments of the retried comment %d, comment requests %d; want 1 and 2", n, m)
	}
	st, err := f.svc.GetOperation(ctx, f.caller.Tenant, ticketstest.OpID(id))
	if err != nil || st.Downstream.Attempts != 1 || st.Downstream.ExternalID != res.Ticket.ExternalID {
		t.Fatalf("status = %+v, %v; want one attempt, found", st.Downstream, err)
	}
}

func TestLaggingIndexDelaysAReSendJira(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newJira(t, d, settle)
		e.jr.LagSearch(indexLag)
		runIndexLag(t, lagFake{
			caller: e.caller(), svc: e.svc, project: "ops",
			failCreate:  func() { e.jr.FailCreates(jiratest.DropAfterCreate) },
			failComment: func() { e.jr.FailComments(jiratest.DropAfterCreate) },
			issues:      func(id string) int { return len(e.marked(id)) },
			comments: func(id string) int {
				return countComments(e.jr.Issues(jiraKey)[0].Comments, func(c jiratest.Comment) string { return jira.DocumentText(c.Body) },
					tracker.ActionMarker(e.tenant, tickets.ActionAddComment, id))
			},
			creates: e.jr.CreateRequests, commentsSent: e.jr.CommentRequests,
		})
	})
}

func TestLaggingIndexDelaysAReSendGitHub(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		e := newTracked(t, d, false)
		e.gh.LagLists(indexLag)
		runIndexLag(t, lagFake{
			caller: tickets.Caller{Tenant: e.tenant, Subject: "alice"}, svc: e.svc, project: "gh",
			failCreate:  func() { e.gh.FailCreates(githubtest.DropAfterCreate) },
			failComment: func() { e.gh.FailComments(githubtest.DropAfterCreate) },
			issues:      func(id string) int { return len(e.markedIssues(id)) },
			comments: func(id string) int {
				return countComments(e.gh.Issues(repo)[0].Comments, func(c githubtest.Comment) string { return c.Body },
					tracker.ActionMarker(e.tenant, tickets.ActionAddComment, id))
			},
			creates: e.gh.CreateRequests, commentsSent: e.gh.CommentRequests,
		})
	})
}

func countComments[C any](cs []C, body func(C) string, marker string) int {
	n := 0
	for _, c := range cs {
		if strings.Contains(body(c), marker) {
			n++
		}
	}
	return n
}
