package tracked_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/reconciler"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

const (
	fakeToken = "ghp_test"
	repo      = "acme/widgets"
	settle    = 4 * time.Second
)

type trackedEnv struct {
	tenant string
	svc    *tickets.Service
	gh     *githubtest.Server
	d      *db.DB
	conn   tracked.Options // the connection to the fake, with the test's windows
}

// newTracked returns a service with a tracker-backed project "gh" (key GH)
// for tenantA on a fresh fake GitHub; queue starts the reconciliation job.
func newTracked(t *testing.T, d *db.DB, queue bool) *trackedEnv {
	t.Helper()
	gh := githubtest.New(fakeToken)
	// Longer than the client waits, shorter than the settle window: the
	// window is what lets a slow request land before anything is re-sent.
	// A second either side of it, so that a loaded machine (make test
	// under -race) can neither land it before an immediate retry looks nor
	// past the window.
	gh.SlowDelay = 1500 * time.Millisecond
	apiURL := githubtest.Start(t, gh)
	env := &trackedEnv{gh: gh, d: d, tenant: "t" + newID()[:8]}
	tracked := githubtest.Tracked(fakeToken, 500*time.Millisecond)
	tracked.Settle, tracked.Lease = settle, 5*time.Second
	env.conn = tracked
	opts := tickets.Options{Tracked: tracked}
	var q *reconciler.Queue
	if queue {
		if err := webhooks.Migrate(context.Background(), d); err != nil {
			t.Fatal(err)
		}
		var err error
		if q, err = reconciler.New(d, reconciler.Options{PollInterval: 50 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		tracked.Scheduler = q
		opts.Tracked = tracked
	}
	env.svc = tickets.NewService(d.Gorm, opts)
	if q != nil {
		if err := q.Start(context.Background(), env.svc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = q.Stop(ctx)
		})
	}
	_, err := env.svc.CreateProject(context.Background(), env.tenant, tickets.Project{ID: "gh", Key: "GH", Name: "Widgets",
		Backend: &tracker.Backend{Kind: tracker.KindGitHub, Repository: repo, APIURL: apiURL, Credential: githubtest.Credential}})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func ghTicket(title string) tickets.NewTicket {
	return tickets.NewTicket{ProjectID: "gh", Title: title, Description: "Steps to reproduce.", Labels: []string{"bug"}}
}

// markedIssues returns the fake's issues carrying id's marker.
func (e *trackedEnv) markedIssues(id string) []githubtest.Issue {
	var out []githubtest.Issue
	for _, i := range e.gh.Issues(repo) {
		if strings.Contains(i.Body, tracker.Marker(e.tenant, id)) {
			out = append(out, i)
		}
	}
	return out
}

// eventually retries create until it succeeds or the deadline passes,
// asserting that no answer in between claims success or a clean failure.
func (e *trackedEnv) eventually(t *testing.T, id string, in tickets.NewTicket, within time.Duration) tickets.CreateResult {
	t.Helper()
	return untilSettled(t, within, func() (tickets.CreateResult, error) {
		return e.svc.CreateTicket(context.Background(), tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), in)
	})
}

// untilSettled calls write every 200 ms until it succeeds or within
// passes, failing the test (unsettled) on an answer that is neither success
// nor "not settled yet": a clean failure for something that may have
// happened is the one answer a tracked write must never give.
func untilSettled[T any](t *testing.T, within time.Duration, write func() (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		res, err := write()
		if err == nil {
			return res
		}
		unsettled(t, err)
		if time.Now().After(deadline) {
			t.Fatalf("not settled within %s: %v", within, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestTrackedCreate(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()

		t.Run("DefiniteAnswerMirrorsTheIssueAndRetryReplays", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			id := newID()
			res, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Widget jams"))
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			issues := e.markedIssues(id)
			if len(issues) != 1 || res.Ticket.ExternalID != repo+"#1" || !strings.HasSuffix(res.Ticket.ExternalURL, "/acme/widgets/issues/1") {
				t.Fatalf("issues %+v, ticket %+v", issues, res.Ticket)
			}
			if got := issues[0].Labels; len(got) != 2 || got[0] != tracker.Label || issues[0].Title != "Widget jams" {
				t.Errorf("issue = %+v; want title and the ticketd label", issues[0])
			}
			again, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Widget jams"))
			if err != nil || !again.Replayed || again.Ticket.ID != res.Ticket.ID {
				t.Fatalf("retry = %+v, %v; want the same ticket replayed", again, err)
			}
			if n := e.gh.CreateRequests(); n != 1 {
				t.Errorf("create requests = %d, want 1", n)
			}
			st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id))
			if err != nil || st.Downstream == nil || st.Downstream.Status != tickets.DownstreamSucceeded || st.Downstream.Attempts != 1 || st.Downstream.ExternalID != repo+"#1" {
				t.Fatalf("status = %+v, %v", st.Downstream, err)
			}
		})

		for _, tc := range []struct {
			name  string
			fault githubtest.Fault
		}{
			{"AnswerDroppedAfterCreate", githubtest.DropAfterCreate},
			{"BadGatewayAfterCreate", githubtest.BadGatewayAfterCreate},
		} {
			t.Run(tc.name+"IsUnknownThenFoundWithoutResending", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				e.gh.FailCreates(tc.fault)
				id := newID()
				_, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Lost answer"))
				if !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("first call: %v; want outcome unknown", err)
				}
				res := e.eventually(t, id, ghTicket("Lost answer"), 10*time.Second)
				if !res.Replayed || res.Ticket.ExternalID != repo+"#1" {
					t.Errorf("retry = %+v", res)
				}
				if n, m := e.gh.CreateRequests(), len(e.markedIssues(id)); n != 1 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
				}
			})
		}

		t.Run("CreateLandingAfterTimeoutIsNeverSentAgain", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			e.gh.FailCreates(githubtest.SlowCreate)
			id := newID()
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Slow")); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			// Retried at once: the issue has not landed, and the settle
			// window forbids a second request.
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Slow")); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("immediate retry: %v; want outcome unknown", err)
			}
			e.eventually(t, id, ghTicket("Slow"), 10*time.Second)
			if n, m := e.gh.CreateRequests(), len(e.markedIssues(id)); n != 1 || m != 1 {
				t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
			}
		})

		for _, fault := range []githubtest.Fault{githubtest.SecondaryRateLimit, githubtest.TooManyRequests} {
			t.Run("RateLimitedCreateIsPendingThenSent", func(t *testing.T) {
				t.Parallel()
				e := newTracked(t, d, false)
				e.gh.FailCreates(fault)
				id := newID()
				_, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Limited"))
				if !errors.Is(err, operations.ErrInProgress) {
					t.Fatalf("first call: %v; want pending", err)
				}
				if len(e.gh.Issues(repo)) != 0 {
					t.Fatal("a rate-limited create made an issue")
				}
				e.eventually(t, id, ghTicket("Limited"), 10*time.Second)
				if n, m := e.gh.CreateRequests(), len(e.markedIssues(id)); n != 2 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 2 and 1", n, m)
				}
			})
		}

		t.Run("LaggingListDuplicateIsDetectedClosedAndReported", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			e.gh.FailCreates(githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour) // until the list catches up, below
			id := newID()
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Lagging")); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			res := e.eventually(t, id, ghTicket("Lagging"), 10*time.Second)
			if res.Ticket.ExternalID != repo+"#2" || len(e.markedIssues(id)) != 2 {
				t.Fatalf("after re-send: ticket %s, %d issues; want #2 and two issues", res.Ticket.ExternalID, len(e.markedIssues(id)))
			}
			// The first issue surfaces once the list catches up; the duplicate
			// check (here run by an operator) keeps the older one.
			e.gh.LagLists(0)
			st, err := e.svc.ReconcileOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(id), "")
			if err != nil {
				t.Fatalf("reconcile: %v", err)
			}
			issues := e.markedIssues(id)
			if issues[0].State != "open" || issues[1].State != "closed" || len(issues[1].Comments) != 1 || !strings.Contains(issues[1].Comments[0].Body, "Duplicate of #1") {
				t.Fatalf("issues after check = %+v", issues)
			}
			ds := st.Downstream
			if ds.ExternalID != repo+"#1" || len(ds.Duplicates) != 1 || ds.Duplicates[0].ExternalID != repo+"#2" || !ds.Duplicates[0].Closed {
				t.Fatalf("downstream = %+v", ds)
			}
			tk, err := e.svc.GetTicket(ctx, e.tenant, res.Ticket.ID.String())
			if err != nil || tk.ExternalID != repo+"#1" {
				t.Fatalf("ticket = %+v, %v; want it to mirror the kept issue", tk, err)
			}
		})

		t.Run("RejectedCreateIsACleanFailure", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			e.gh.Token = "rotated" // the configured token is refused: 401
			id := newID()
			_, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Refused"))
			if !errors.Is(err, operations.ErrFailed) {
				t.Fatalf("create: %v; want failed", err)
			}
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Refused")); !errors.Is(err, operations.ErrFailed) {
				t.Fatalf("retry: %v; want the recorded failure", err)
			}
			if n := len(e.gh.Issues(repo)); n != 0 {
				t.Errorf("%d issues after a refusal, want none", n)
			}
		})

		t.Run("JobSettlesWithoutAnyRetry", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, true)
			e.gh.FailCreates(githubtest.DropAfterCreate)
			id := newID()
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Job")); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id))
				if err != nil {
					t.Fatal(err)
				}
				if st.Record.Status == operations.StatusSucceeded {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("job did not settle: %+v", st.Downstream)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if n, m := e.gh.CreateRequests(), len(e.markedIssues(id)); n != 1 || m != 1 {
				t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
			}
		})

		t.Run("OperatorResolvesAndRetriesAnswerTheFinding", func(t *testing.T) {
			t.Parallel()
			e := newTracked(t, d, false)
			e.gh.FailCreates(githubtest.DropAfterCreate, githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			done, gone := newID(), newID()
			for _, id := range []string{done, gone} {
				if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(id), ghTicket("Resolve me "+id)); !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("create: %v; want outcome unknown", err)
				}
			}
			if _, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(done), "", tickets.Resolution{Outcome: "succeeded", ExternalID: "#1"}); !errors.Is(err, tickets.ErrInvalid) {
				t.Fatalf("resolve without a reason: %v; want invalid", err)
			}
			st, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(done), "", tickets.Resolution{Outcome: "succeeded", ExternalID: repo + "#1", Reason: "I see it in the repository"})
			if err != nil || st.Record.Status != operations.StatusSucceeded {
				t.Fatalf("resolve succeeded: %+v, %v", st.Record, err)
			}
			last := st.History[len(st.History)-1]
			if last.Actor != "olivia" || last.Kind != "resolved" || !strings.Contains(last.Detail, "I see it in the repository") {
				t.Errorf("history ends with %+v; want olivia's finding", last)
			}
			res, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(done), ghTicket("Resolve me "+done))
			if err != nil || !res.Replayed || res.Ticket.ExternalID != repo+"#1" {
				t.Fatalf("retry after resolve = %+v, %v", res, err)
			}
			if _, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(gone), "", tickets.Resolution{Outcome: "not_created", Reason: "checked by hand"}); err != nil {
				t.Fatalf("resolve not_created: %v", err)
			}
			if _, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: e.tenant, Subject: "alice"}, ticketstest.OpID(gone), ghTicket("Resolve me "+gone)); !errors.Is(err, operations.ErrFailed) || !strings.Contains(err.Error(), "checked by hand") {
				t.Fatalf("retry after not_created: %v; want the recorded finding", err)
			}
			if _, err := e.svc.ResolveOperation(ctx, tickets.Caller{Tenant: e.tenant, Subject: "olivia"}, ticketstest.OpID(gone), "", tickets.Resolution{Outcome: "not_created", Reason: "again"}); !errors.Is(err, tickets.ErrSettled) {
				t.Fatalf("second resolve: %v; want already settled", err)
			}
			if e.gh.CreateRequests() != 2 {
				t.Errorf("create requests = %d, want 2", e.gh.CreateRequests())
			}
		})
	})
}
