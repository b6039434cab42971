package tracked_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// Sub-tasks of tracker-backed tickets (docs/contract.md#sub-tasks): the
// parent is kept in ticketd and shown, never sent to the tracker.

// parentEnv is a tracked env whose service also has a local project "loc"
// (key LOC) and records the webhook events its writes enqueue.
type parentEnv struct {
	*trackedEnv
	mu      sync.Mutex
	webhook []tickets.WriteEvent
}

func newParentEnv(t *testing.T, d *db.DB) *parentEnv {
	t.Helper()
	e := &parentEnv{trackedEnv: newTracked(t, d, false)}
	e.svc = tickets.NewService(d.Gorm, tickets.Options{Tracked: e.conn, Outbox: outboxFunc(func(ev tickets.WriteEvent) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.webhook = append(e.webhook, ev)
		return nil
	})})
	if _, err := e.svc.CreateProject(context.Background(), e.tenant, tickets.Project{ID: "loc", Key: "LOC", Name: "Local"}); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *parentEnv) caller() tickets.Caller {
	return tickets.Caller{Tenant: e.tenant, Subject: "alice"}
}

// under creates a ticket in project with parent (a key or UUID; "" none).
func (e *parentEnv) under(project, opID, parent string) (tickets.CreateResult, error) {
	n := ghTicket("Sub-task")
	n.ProjectID, n.Parent = project, parent
	return e.svc.CreateTicket(context.Background(), e.caller(), ticketstest.OpID(opID), n)
}

func (e *parentEnv) mustUnder(t *testing.T, project, parent string) tickets.Ticket {
	t.Helper()
	res, err := e.under(project, newID(), parent)
	if err != nil {
		t.Fatalf("create in %s under %q: %v", project, parent, err)
	}
	return res.Ticket
}

func (e *parentEnv) move(opID string, tk tickets.Ticket, u tickets.TicketUpdate) (tickets.UpdateResult, error) {
	return e.svc.UpdateTicket(context.Background(), e.caller(), ticketstest.OpID(opID), tk.Key, u)
}

func parentIs(ref string) tickets.TicketUpdate { return tickets.TicketUpdate{Parent: &ref} }

// family is tk's parent key ("" none) and its children's keys.
func (e *parentEnv) family(t *testing.T, tk tickets.Ticket) (string, []string) {
	t.Helper()
	parent, children, err := e.svc.Family(context.Background(), e.tenant, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if parent == nil {
		return "", children.Keys
	}
	return parent.Key, children.Keys
}

func (e *parentEnv) webhooks(kind tickets.EventKind, ticket tickets.Ticket) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.webhook {
		if ev.Kind == kind && ev.Ticket.ID == ticket.ID {
			n++
		}
	}
	return n
}

// nothingSent fails the test when the fake received a request since before.
func (e *parentEnv) nothingSent(t *testing.T, before int, what string) {
	t.Helper()
	if n := e.gh.Requests() - before; n != 0 {
		t.Errorf("%s: %d tracker request(s), want none", what, n)
	}
}

func TestTrackedSubTasks(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()

		t.Run("ACreateWithAParentShowsOnItAndSendsOnlyTheCreate", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			top := e.tracked(t)
			before, op := e.gh.Requests(), newID()
			child, err := e.under("gh", op, strings.ToLower(top.Key))
			if err != nil {
				t.Fatal(err)
			}
			if n := e.gh.Requests() - before; n != 1 || e.gh.CreateRequests() != 2 {
				t.Errorf("tracker requests for a create with a parent = %d (creates %d); want the one create", n, e.gh.CreateRequests())
			}
			if body := e.gh.Issues(repo)[1].Body; strings.Contains(body, top.Key) || strings.Contains(body, top.ID.String()) {
				t.Errorf("the issue names its parent: %q", body)
			}
			if p, _ := e.family(t, child.Ticket); p != top.Key {
				t.Errorf("parent of %s = %q, want %s", child.Ticket.Key, p, top.Key)
			}
			if _, keys := e.family(t, top); len(keys) != 1 || keys[0] != child.Ticket.Key {
				t.Errorf("children of %s = %v, want [%s]", top.Key, keys, child.Ticket.Key)
			}
			page, err := e.svc.ListTickets(ctx, e.caller(), tickets.ListTicketsParams{Parent: top.Key})
			if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != child.Ticket.ID {
				t.Errorf("list(parent=%s) = %+v, %v", top.Key, page.Tickets, err)
			}
			before = e.gh.Requests()
			retry, err := e.under("gh", op, top.ID.String())
			if err != nil || !retry.Replayed || retry.Ticket.ID != child.Ticket.ID {
				t.Errorf("retry with the parent's UUID = %+v, %v; want the ticket replayed", retry, err)
			}
			other := e.mustUnder(t, "loc", "")
			if _, err := e.under("gh", op, other.Key); !errors.Is(err, operations.ErrConflict) {
				t.Errorf("same operation_id, another parent: %v; want a conflict", err)
			}
			e.nothingSent(t, before, "a replay and a conflict")
		})

		t.Run("TrackerAndLocalTicketsNestEitherWay", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			local := e.mustUnder(t, "loc", "")
			tracked := e.mustUnder(t, "gh", local.Key)
			below := e.mustUnder(t, "loc", tracked.Key)
			if p, kids := e.family(t, tracked); p != local.Key || len(kids) != 1 || kids[0] != below.Key {
				t.Errorf("%s: parent %q, children %v; want %s and [%s]", tracked.Key, p, kids, local.Key, below.Key)
			}
			if p, _ := e.family(t, below); p != tracked.Key {
				t.Errorf("parent of the local %s = %q, want the tracker's %s", below.Key, p, tracked.Key)
			}
		})

		t.Run("ARefusedParentSendsNothing", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			chain := []tickets.Ticket{e.mustUnder(t, "loc", "")}
			for range 3 {
				chain = append(chain, e.mustUnder(t, "gh", chain[len(chain)-1].Key))
			}
			theirs, err := e.svc.CreateProject(ctx, "other"+e.tenant, tickets.Project{ID: "loc", Key: "LOC", Name: "Theirs"})
			if err != nil {
				t.Fatal(err)
			}
			their, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: "other" + e.tenant, Subject: "bob"}, ticketstest.OpID(newID()),
				tickets.NewTicket{ProjectID: theirs.ID, Title: "Theirs"})
			if err != nil {
				t.Fatal(err)
			}
			before := e.gh.Requests()
			deep := newID()
			if _, err := e.under("gh", deep, chain[3].Key); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("a fifth level: %v; want invalid input", err)
			}
			if _, err := e.move(newID(), chain[1], parentIs(chain[3].Key)); !errors.Is(err, tickets.ErrInvalid) || !strings.Contains(err.Error(), "cycle") {
				t.Errorf("a tracker ticket under its own sub-task: %v; want the cycle refused", err)
			}
			if _, err := e.under("gh", newID(), their.Ticket.ID.String()); !errors.Is(err, tickets.ErrNotFound) {
				t.Errorf("create under another tenant's ticket: %v; want not found", err)
			}
			if _, err := e.move(newID(), chain[1], parentIs(their.Ticket.ID.String())); !errors.Is(err, tickets.ErrNotFound) {
				t.Errorf("move under another tenant's ticket: %v; want not found", err)
			}
			e.nothingSent(t, before, "refused parents")
			if _, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(deep)); !errors.Is(err, operations.ErrNotFound) {
				t.Errorf("the refused create left a record: %v; its operation_id must stay usable", err)
			}
			if res, err := e.under("gh", deep, chain[2].Key); err != nil || e.gh.Requests()-before != 1 {
				t.Errorf("the same operation_id under the fourth level = %+v, %v; want one create", res, err)
			}
		})

		t.Run("AParentOnlyUpdateIsALocalWriteAndReplays", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			tk, top := e.tracked(t), e.mustUnder(t, "loc", "")
			before, op := e.gh.Requests(), newID()
			res, err := e.move(op, tk, parentIs(top.Key))
			if ch := res.Changes["parent"]; err != nil || res.Version != 2 || ch.From != nil || ch.To != top.Key || len(res.Changes) != 1 {
				t.Fatalf("move = %+v, %v; want version 2 and changes.parent null → %s", res, err, top.Key)
			}
			if _, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(op)); err != nil {
				t.Errorf("the move has no record: %v", err)
			}
			page, err := e.svc.ListEvents(ctx, e.tenant, tk.Key, tickets.ListParams{})
			if last := page.Events[len(page.Events)-1]; err != nil || last.Kind != tickets.EventUpdated || last.Changes["parent"].To != top.Key {
				t.Errorf("events = %+v, %v; want an updated event with changes.parent", page.Events, err)
			}
			retry, err := e.move(op, tk, parentIs(top.ID.String()))
			if err != nil || !retry.Replayed || retry.Version != 2 {
				t.Errorf("retry = %+v, %v; want the move replayed", retry, err)
			}
			if _, err := e.move(op, tk, parentIs("")); !errors.Is(err, operations.ErrConflict) {
				t.Errorf("same operation_id, another parent: %v; want a conflict", err)
			}
			if n := e.webhooks(tickets.EventUpdated, tk); n != 1 {
				t.Errorf("ticket.updated webhooks = %d, want 1", n)
			}
			detach, err := e.move(newID(), tk, parentIs(""))
			if err != nil || detach.Version != 3 || detach.Changes["parent"].From != top.Key || detach.Changes["parent"].To != nil {
				t.Errorf("detach = %+v, %v", detach, err)
			}
			e.nothingSent(t, before, "parent-only updates, a replay and a conflict")
		})

		t.Run("AParentWithTrackerFieldsIsRefusedUntilSentAlone", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			tk, top := e.tracked(t), e.mustUnder(t, "loc", "")
			before, op := e.gh.Requests(), newID()
			both := closeAndRename()
			both.Parent = &top.Key
			var invalid *tickets.ValidationError
			if _, err := e.move(op, tk, both); !errors.As(err, &invalid) || invalid.Fields[0].Field != "parent" ||
				!strings.Contains(err.Error(), "send parent alone") {
				t.Fatalf("parent with tracker fields: %v; want invalid input on parent asking for two calls", err)
			}
			e.nothingSent(t, before, "a refused parent with tracker fields")
			if _, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(op)); !errors.Is(err, operations.ErrNotFound) {
				t.Errorf("the refused update left a record: %v", err)
			}
			// Priority has no GitHub counterpart: with a parent it is one local write.
			high := tickets.PriorityHigh
			res, err := e.move(op, tk, tickets.TicketUpdate{Parent: &top.Key, Priority: &high})
			if err != nil || res.Version != 2 || len(res.Changes) != 2 {
				t.Errorf("parent and priority = %+v, %v; want one local write", res, err)
			}
			e.nothingSent(t, before, "parent and priority")
			if res := e.updateUntil(t, newID(), tk.Key, closeAndRename(), 5*time.Second); res.Version != 3 || !e.showsUpdate() {
				t.Errorf("the tracker fields alone = %+v; want the edit sent", res)
			}
			if p, _ := e.family(t, tk); p != top.Key {
				t.Errorf("parent after the edit = %q, want %s kept", p, top.Key)
			}
		})

		t.Run("AParentTheTreeNoLongerAllowsIsNotedWhenTheIssueIsRecorded", func(t *testing.T) {
			t.Parallel()
			e := newParentEnv(t, d)
			top := e.mustUnder(t, "loc", "")
			chain := []tickets.Ticket{e.mustUnder(t, "loc", "")}
			for range 2 {
				chain = append(chain, e.mustUnder(t, "loc", chain[len(chain)-1].Key))
			}
			e.gh.FailCreates(githubtest.DropAfterCreate)
			op := newID()
			if _, err := e.under("gh", op, top.Key); !errors.Is(err, operations.ErrOutcomeUnknown) {
				t.Fatalf("first call: %v; want outcome unknown", err)
			}
			// While the issue is unrecorded, its parent moves three deep.
			if _, err := e.move(newID(), top, parentIs(chain[2].Key)); err != nil {
				t.Fatal(err)
			}
			res := e.eventually(t, op, tickets.NewTicket{ProjectID: "gh", Title: "Sub-task", Description: "Steps to reproduce.",
				Labels: []string{"bug"}, Parent: top.ID.String()}, 10*time.Second)
			if p, _ := e.family(t, res.Ticket); p != "" || len(e.markedIssues(op)) != 1 {
				t.Errorf("parent = %q, issues %d; want the one issue recorded with no parent", p, len(e.markedIssues(op)))
			}
			st, err := e.svc.GetOperation(ctx, e.tenant, ticketstest.OpID(op))
			if err != nil || st.Record.Status != operations.StatusSucceeded || !strings.Contains(historyText(st), "parent_refused: "+res.Ticket.Key+" recorded without its parent") {
				t.Errorf("status = %+v, %v; history:\n%s", st.Record, err, historyText(st))
			}
		})
	})
}

// TestJiraSubTasks: on a Jira-backed project too, a parent costs no request
// beyond the create's, and a move none at all.
func TestJiraSubTasks(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		e := newJira(t, d, settle)
		top := e.eventually(t, newID(), opsTicket("Epic"), 5*time.Second).Ticket
		before, creates := e.jr.Requests(), e.jr.CreateRequests()
		n := opsTicket("Story")
		n.Parent = top.Key
		child, err := e.svc.CreateTicket(ctx, e.caller(), ticketstest.OpID(newID()), n)
		if err != nil {
			t.Fatal(err)
		}
		if sent, made := e.jr.Requests()-before, e.jr.CreateRequests()-creates; sent != 1 || made != 1 {
			t.Errorf("requests for a create with a parent = %d (%d creates); want the one create", sent, made)
		}
		if parent, _, err := e.svc.Family(ctx, e.tenant, child.Ticket.ID); err != nil || parent == nil || parent.Key != top.Key {
			t.Errorf("parent of %s = %+v, %v; want %s", child.Ticket.Key, parent, err, top.Key)
		}
		before, op, detach := e.jr.Requests(), newID(), ""
		res, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(op), child.Ticket.Key, tickets.TicketUpdate{Parent: &detach})
		if err != nil || res.Version != 2 || res.Changes["parent"].From != top.Key {
			t.Fatalf("detach = %+v, %v", res, err)
		}
		retry, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(op), child.Ticket.Key, tickets.TicketUpdate{Parent: &detach})
		if err != nil || !retry.Replayed || retry.Version != 2 {
			t.Errorf("retry = %+v, %v; want the detach replayed", retry, err)
		}
		high := tickets.PriorityHigh // a Jira issue holds priority: with a parent, refused
		if _, err := e.svc.UpdateTicket(ctx, e.caller(), ticketstest.OpID(newID()), child.Ticket.Key,
			tickets.TicketUpdate{Parent: &top.Key, Priority: &high}); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("parent with priority on Jira: %v; want invalid input", err)
		}
		if n := e.jr.Requests() - before; n != 0 {
			t.Errorf("%d Jira request(s) for a detach, its replay and a refused update; want none", n)
		}
	})
}
