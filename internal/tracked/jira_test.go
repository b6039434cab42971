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
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// The Jira twins of the GitHub tests: the same faults, met by the Jira
// adapter against the Jira-shaped fake, through the service.

const (
	jiraEmail = "bot@acme.test"
	jiraToken = "jira-api-token"
	jiraKey   = "OPS"
)

type jiraEnv struct {
	tenant string
	svc    *tickets.Service
	jr     *jiratest.Server
	site   string
}

// newJira returns a service with a Jira-backed project "ops" (key OPS) for
// a fresh tenant on a fresh fake Jira, with the GitHub tests' windows.
func newJira(t *testing.T, d *db.DB, settleFor time.Duration) *jiraEnv {
	t.Helper()
	jr := jiratest.New(jiraEmail, jiraToken)
	jr.SlowDelay = 1500 * time.Millisecond
	site := jiratest.Start(t, jr)
	conn := jiratest.Tracked(jiraEmail+":"+jiraToken, jira.Options{Timeout: 500 * time.Millisecond})
	conn.Settle, conn.Lease = settleFor, 5*time.Second
	e := &jiraEnv{tenant: "t" + newID()[:8], svc: tickets.NewService(d.Gorm, tickets.Options{Tracked: conn}), jr: jr, site: site}
	_, err := e.svc.CreateProject(context.Background(), e.tenant, tickets.Project{ID: "ops", Key: "OPSX", Name: "Operations",
		Backend: jiratest.Backend(site, jiraKey)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func opsTicket(title string) tickets.NewTicket {
	return tickets.NewTicket{ProjectID: "ops", Title: title, Description: "Steps to reproduce.", Labels: []string{"bug"}}
}

func (e *jiraEnv) caller() tickets.Caller { return tickets.Caller{Tenant: e.tenant, Subject: "alice"} }

// marked returns the fake's issues carrying id's operation label.
func (e *jiraEnv) marked(id string) []jiratest.Issue {
	var out []jiratest.Issue
	for _, i := range e.jr.Issues(jiraKey) {
		for _, l := range i.Labels {
			if l == jira.OpLabel(e.tenant, id) {
				out = append(out, i)
			}
		}
	}
	return out
}

func (e *jiraEnv) eventually(t *testing.T, id string, in tickets.NewTicket, within time.Duration) tickets.CreateResult {
	t.Helper()
	return untilSettled(t, within, func() (tickets.CreateResult, error) {
		return e.svc.CreateTicket(context.Background(), e.caller(), ticketstest.OpID(id), in)
	})
}

func TestJiraCreate(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()

		t.Run("DefiniteAnswerMirrorsTheIssueAndStatusNamesJira", func(t *testing.T) {
			t.Parallel()
			e := newJira(t, d, settle)
			id := newID()
			res, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(id), opsTicket("Disk full"))
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if issues := e.marked(id); len(issues) != 1 || res.Ticket.ExternalID != "OPS-1" || res.Ticket.ExternalURL != e.site+"/browse/OPS-1" {
				t.Fatalf("issues %+v, ticket %+v", issues, res.Ticket)
			}
			st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(id))
			if err != nil || st.Downstream == nil || st.Downstream.System != "jira" || st.Downstream.ExternalID != "OPS-1" ||
				st.Downstream.ExternalURL != e.site+"/browse/OPS-1" {
				t.Fatalf("status = %+v, %v", st.Downstream, err)
			}
			if n := e.jr.CreateRequests(); n != 1 {
				t.Errorf("create requests = %d, want 1", n)
			}
		})

		for _, tc := range []struct {
			name  string
			fault jiratest.Fault
		}{
			{"AnswerDroppedAfterCreate", jiratest.DropAfterCreate},
			{"BadGatewayAfterCreate", jiratest.BadGatewayAfterCreate},
			{"CreateLandingAfterTimeout", jiratest.SlowCreate},
		} {
			t.Run(tc.name+"IsUnknownThenFoundWithoutResending", func(t *testing.T) {
				t.Parallel()
				e := newJira(t, d, settle)
				e.jr.FailCreates(tc.fault)
				id := newID()
				if _, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(id), opsTicket("Lost")); !errors.Is(err, operations.ErrOutcomeUnknown) {
					t.Fatalf("first call: %v; want outcome unknown", err)
				}
				if tc.fault == jiratest.SlowCreate {
					// Retried at once: the issue has not landed, and the
					// settle window forbids a second request.
					if _, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(id), opsTicket("Lost")); !errors.Is(err, operations.ErrOutcomeUnknown) {
						t.Fatalf("immediate retry: %v; want outcome unknown", err)
					}
				}
				res := e.eventually(t, id, opsTicket("Lost"), 10*time.Second)
				if !res.Replayed || res.Ticket.ExternalID != "OPS-1" {
					t.Errorf("retry = %+v", res)
				}
				if n, m := e.jr.CreateRequests(), len(e.marked(id)); n != 1 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
				}
			})
		}

		t.Run("TooManyRequestsIsPendingThenSent", func(t *testing.T) {
			t.Parallel()
			e := newJira(t, d, settle)
			e.jr.FailCreates(jiratest.TooManyRequests)
			id := newID()
			if _, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(id), opsTicket("Limited")); !errors.Is(err, operations.ErrInProgress) {
				t.Fatalf("first call: %v; want pending", err)
			}
			if len(e.jr.Issues(jiraKey)) != 0 {
				t.Fatal("a rate-limited create made an issue")
			}
			e.eventually(t, id, opsTicket("Limited"), 10*time.Second)
			if n, m := e.jr.CreateRequests(), len(e.marked(id)); n != 2 || m != 1 {
				t.Errorf("create requests %d, issues %d; want 2 and 1", n, m)
			}
		})

		for _, fault := range []jiratest.Fault{jiratest.Unauthorized, jiratest.Forbidden} {
			t.Run("RefusedCreateIsACleanFailure", func(t *testing.T) {
				t.Parallel()
				e := newJira(t, d, settle)
				e.jr.FailCreates(fault)
				id := newID()
				for range 2 {
					if _, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(id), opsTicket("Refused")); !errors.Is(err, operations.ErrFailed) {
						t.Fatalf("create: %v; want failed", err)
					}
				}
				if n := len(e.jr.Issues(jiraKey)); n != 0 {
					t.Errorf("%d issues after a refusal, want none", n)
				}
			})
		}
	})
}

func TestJiraStatusWithNoTransitionIsInvalidInput(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newJira(t, d, settle)
		res, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(newID()), opsTicket("Workflow"))
		if err != nil {
			t.Fatal(err)
		}
		flow := jiratest.DefaultWorkflow()
		flow.Transitions = flow.Transitions[:1] // To Do → In Progress only
		e.jr.SetWorkflow(flow)
		resolved := tickets.StatusResolved
		_, err = e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(newID()), res.Ticket.ID.String(), tickets.TicketUpdate{Status: &resolved})
		var ve *tickets.ValidationError
		if !errors.As(err, &ve) || ve.Fields[0].Field != "status" || !strings.Contains(err.Error(), "Start progress → In Progress") {
			t.Fatalf("update: %v; want invalid_input on status naming the available transition", err)
		}
		if e.jr.EditRequests() != 0 || e.jr.TransitionRequests() != 0 {
			t.Errorf("edits %d, transitions %d; want nothing sent", e.jr.EditRequests(), e.jr.TransitionRequests())
		}
		inProgress := tickets.StatusInProgress
		up, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(newID()), res.Ticket.ID.String(), tickets.TicketUpdate{Status: &inProgress})
		if err != nil || up.Ticket.Status != tickets.StatusInProgress || e.jr.Issues(jiraKey)[0].Status != "In Progress" {
			t.Fatalf("update to in_progress = %+v, %v", up.Ticket, err)
		}
	})
}

// TestJiraBackendIsCheckedAtCreation: §22's members and defaults, and the
// guard on the site.
func TestJiraBackendIsCheckedAtCreation(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newJira(t, d, settle)
		ps, err := e.svc.ListProjects(ctx, e.tenant)
		if err != nil || len(ps) != 1 {
			t.Fatalf("projects = %+v, %v", ps, err)
		}
		p := ps[0]
		if p.Backend == nil || p.Backend.IssueType != "Task" || p.Backend.StatusMap["in_progress"] != "In Progress" ||
			p.Backend.PriorityMap["urgent"] != "Highest" || p.Backend.Site != e.site {
			t.Fatalf("stored backend = %+v, %v; want §22's defaults spelled out", p.Backend, err)
		}
		for _, tc := range []struct {
			b     tracker.Backend
			field string
		}{
			{tracker.Backend{Kind: "jira", Site: "https://acme.atlassian.net/jira", ProjectKey: "OPS", Credential: jiratest.Credential}, "backend.site"},
			{tracker.Backend{Kind: "jira", Site: e.site, ProjectKey: "ops", Credential: jiratest.Credential}, "backend.project_key"},
			{tracker.Backend{Kind: "jira", Site: e.site, ProjectKey: "OPS", Credential: jiratest.Credential, StatusMap: map[string]string{"done": "Done"}}, "backend.status_map"},
			{tracker.Backend{Kind: "jira", Site: e.site, ProjectKey: "OPS", Credential: "nope"}, "backend.credential"},
			{tracker.Backend{Kind: "jira", Site: e.site, ProjectKey: "OPS", Repository: "a/b", Credential: jiratest.Credential}, "backend"},
		} {
			b := tc.b
			_, err := e.svc.CreateProject(ctx, e.tenant, tickets.Project{ID: "x" + newID()[:6], Key: "X" + strings.ToUpper(newID()[:4]), Name: "X", Backend: &b})
			var ve *tickets.ValidationError
			if !errors.As(err, &ve) || ve.Fields[0].Field != tc.field {
				t.Errorf("backend %+v: %v; want invalid %s", tc.b, err, tc.field)
			}
		}
	})
}
