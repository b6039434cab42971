package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

func ptr[T any](v T) *T { return &v }

func update(tb testing.TB, svc *tickets.Service, tenant, ref string, u tickets.TicketUpdate) tickets.UpdateResult {
	tb.Helper()
	res, err := svc.UpdateTicket(context.Background(), tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(newID()), ref, u)
	if err != nil {
		tb.Fatalf("update %s with %+v: %v", ref, u, err)
	}
	return res
}

func TestRetriedResolveAfterReopenReplays(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		resolve := newID()
		first, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(resolve), tk.Key, tickets.TicketUpdate{Status: ptr(tickets.StatusResolved)})
		if err != nil || first.Version != 2 || first.Ticket.Status != tickets.StatusResolved {
			t.Fatalf("resolve = %+v, %v", first, err)
		}
		update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{Status: ptr(tickets.StatusOpen)}) // someone reopens: v3
		retry, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(resolve), tk.Key, tickets.TicketUpdate{Status: ptr(tickets.StatusResolved)})
		if err != nil {
			t.Fatal(err)
		}
		want := tickets.Changes{"status": {From: "open", To: "resolved"}}
		if !retry.Replayed || retry.Version != 2 || !reflect.DeepEqual(retry.Changes, want) || !reflect.DeepEqual(first.Changes, want) {
			t.Errorf("retry = %+v; want replayed, version 2, changes %v", retry, want)
		}
		if retry.Ticket.Status != tickets.StatusOpen || retry.Ticket.Version != 3 {
			t.Errorf("ticket after the retry = %s v%d; want it left open at v3", retry.Ticket.Status, retry.Ticket.Version)
		}
		// The first answer is built in memory; it must read exactly as stored.
		got, err := svc.GetTicket(ctx, tenantA, tk.Key)
		if err != nil || !reflect.DeepEqual(got, retry.Ticket) {
			t.Errorf("stored ticket %+v (%v) differs from the replay's %+v", got, err, retry.Ticket)
		}
	})
}

func TestConcurrentUpdatesWithSameIfVersion(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		const callers = 32
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				_, errs[i] = svc.UpdateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key,
					tickets.TicketUpdate{IfVersion: ptr(int64(1)), Title: ptr(fmt.Sprintf("title %d", i))})
			})
		}
		wg.Wait()
		won := 0
		for i, err := range errs {
			var vc *tickets.VersionConflictError
			switch {
			case err == nil:
				won++
			case errors.As(err, &vc):
				if vc.Expected != 1 || vc.Current.Version != 2 || vc.Current.ID != tk.ID {
					t.Errorf("caller %d: conflict %+v; want expected 1, current the ticket at v2", i, vc)
				}
			default:
				t.Errorf("caller %d: %v; want success or a version conflict", i, err)
			}
		}
		if won != 1 {
			t.Errorf("%d updates won, want exactly 1", won)
		}
		if n := countRows(t, d, "ticket_events", "ticket_id = ? AND kind = 'updated'", tk.ID.String()); n != 1 {
			t.Errorf("%d update events, want 1", n)
		}
		if n := countRows(t, d, "operations", "action = ?", tickets.ActionUpdateTicket); n != 1 {
			t.Errorf("%d update records, want 1 (a conflict records nothing)", n)
		}
		if got, err := svc.GetTicket(context.Background(), tenantA, tk.Key); err != nil || got.Version != 2 {
			t.Errorf("ticket = v%d, %v; want v2", got.Version, err)
		}
	})
}

func TestConcurrentUnconditionalUpdatesAllApply(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		const callers = 32
		versions := make([]int64, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Title: ptr(fmt.Sprintf("title %d", i))})
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				versions[i] = res.Version
			})
		}
		wg.Wait()
		slices.Sort(versions)
		for i, v := range versions {
			if v != int64(i+2) {
				t.Fatalf("versions = %v; want 2..%d once each", versions, callers+1)
			}
		}
		// The history chains: each update's "from" is its predecessor's "to".
		var events []tickets.Event
		for cursor := ""; ; {
			page, err := svc.ListEvents(ctx, tenantA, tk.Key, tickets.ListParams{Limit: 10, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, page.Events...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if len(events) != callers+1 || events[0].Kind != tickets.EventCreated {
			t.Fatalf("%d events starting with %q; want created then %d updates", len(events), events[0].Kind, callers)
		}
		title := tk.Title
		for i, e := range events[1:] {
			ch := e.Changes["title"]
			if e.Kind != tickets.EventUpdated || e.Version != int64(i+2) || e.Seq != int64(i+2) || ch.From != title {
				t.Fatalf("event %d = %+v; want version %d changing the title from %q", i+1, e, i+2, title)
			}
			title, _ = ch.To.(string)
		}
		if got, err := svc.GetTicket(ctx, tenantA, tk.Key); err != nil || got.Title != title || got.Version != callers+1 {
			t.Errorf("ticket = %q v%d (%v); want the last event's title %q at v%d", got.Title, got.Version, err, title, callers+1)
		}
	})
}

func TestStatusMoves(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		// How to reach each status from open.
		reach := map[tickets.Status][]tickets.Status{
			tickets.StatusOpen: nil, tickets.StatusInProgress: {tickets.StatusInProgress},
			tickets.StatusResolved: {tickets.StatusResolved}, tickets.StatusClosed: {tickets.StatusClosed},
		}
		allowed := map[tickets.Status]string{
			tickets.StatusOpen: "in_progress, resolved, closed", tickets.StatusInProgress: "open, resolved, closed",
			tickets.StatusResolved: "open, closed", tickets.StatusClosed: "open",
		}
		for _, from := range tickets.Statuses {
			for _, to := range tickets.Statuses {
				if from == to {
					continue
				}
				tk := newTicket(t, svc, tenantA)
				for _, st := range reach[from] {
					update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{Status: ptr(st)})
				}
				before, err := svc.GetTicket(ctx, tenantA, tk.Key)
				if err != nil {
					t.Fatal(err)
				}
				id := newID()
				res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{Status: ptr(to)})
				ok := strings.Contains(allowed[from], string(to))
				if ok {
					if err != nil || res.Ticket.Status != to || res.Version != before.Version+1 {
						t.Errorf("%s -> %s = %+v, %v; want allowed", from, to, res, err)
					}
					continue
				}
				var ve *tickets.ValidationError
				if !errors.As(err, &ve) || !strings.HasSuffix(ve.Error(), "allowed moves from "+string(from)+": "+allowed[from]) {
					t.Errorf("%s -> %s: %v; want invalid input naming %q", from, to, err, allowed[from])
				}
				after, _ := svc.GetTicket(ctx, tenantA, tk.Key)
				if !reflect.DeepEqual(after, before) {
					t.Errorf("%s -> %s refused but the ticket changed: %+v", from, to, after)
				}
				if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
					t.Errorf("%s -> %s refused but recorded: %v", from, to, err)
				}
			}
		}
	})
}

func TestUpdateFields(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA) // labels hardware, office

		t.Run("LabelsNormalised", func(t *testing.T) {
			res := update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{
				AddLabels: []string{" Urgent ", "OFFICE", "urgent"}, RemoveLabels: []string{"Hardware", "absent"}})
			want := tickets.Changes{"labels": {From: []string{"hardware", "office"}, To: []string{"office", "urgent"}}}
			if !reflect.DeepEqual(res.Changes, want) || !slices.Equal(res.Ticket.Labels, []string{"office", "urgent"}) || res.Version != 2 {
				t.Errorf("update = %+v; want %v at v2", res, want)
			}
			// The first answer is built in memory; it must read exactly as stored.
			if got, err := svc.GetTicket(ctx, tenantA, tk.Key); err != nil || !reflect.DeepEqual(got, res.Ticket) {
				t.Errorf("stored %+v (%v); the update answered %+v", got, err, res.Ticket)
			}
		})
		t.Run("AssignAndUnassign", func(t *testing.T) {
			res := update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{Assignee: ptr("  bob ")})
			if res.Ticket.Assignee != "bob" || !reflect.DeepEqual(res.Changes, tickets.Changes{"assignee": {From: nil, To: "bob"}}) {
				t.Errorf("assign = %+v", res)
			}
			res = update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{Assignee: ptr("")})
			if res.Ticket.Assignee != "" || !reflect.DeepEqual(res.Changes, tickets.Changes{"assignee": {From: "bob", To: nil}}) {
				t.Errorf("unassign = %+v", res)
			}
		})
		t.Run("NothingChangedKeepsVersion", func(t *testing.T) {
			cur, err := svc.GetTicket(ctx, tenantA, tk.Key)
			if err != nil {
				t.Fatal(err)
			}
			res := update(t, svc, tenantA, tk.Key, tickets.TicketUpdate{Title: ptr(" " + cur.Title), AddLabels: []string{"office"}})
			if len(res.Changes) != 0 || res.Version != cur.Version || !reflect.DeepEqual(res.Ticket, cur) {
				t.Errorf("no-op update = %+v; want no changes at v%d", res, cur.Version)
			}
			events, err := svc.ListEvents(ctx, tenantA, tk.Key, tickets.ListParams{})
			if last := events.Events[len(events.Events)-1]; err != nil || last.Version != cur.Version || len(last.Changes) != 0 {
				t.Errorf("last event = %+v, %v; want an update event with no changes", last, err)
			}
		})
		t.Run("StaleIfVersionWritesNothing", func(t *testing.T) {
			cur, err := svc.GetTicket(ctx, tenantA, tk.Key)
			if err != nil {
				t.Fatal(err)
			}
			id := newID()
			_, err = svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{IfVersion: ptr(int64(1)), Priority: ptr(tickets.PriorityLow)})
			var vc *tickets.VersionConflictError
			if !errors.As(err, &vc) || !reflect.DeepEqual(vc.Current, cur) {
				t.Fatalf("stale if_version: %v; want a conflict carrying the current ticket", err)
			}
			if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
				t.Errorf("a version conflict was recorded: %v", err)
			}
			// Re-read and decide again: the same ID stays usable.
			res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{IfVersion: ptr(cur.Version), Priority: ptr(tickets.PriorityLow)})
			if err != nil || res.Replayed || res.Version != cur.Version+1 || res.Ticket.Priority != tickets.PriorityLow {
				t.Errorf("same ID with the current version = %+v, %v", res, err)
			}
			st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
			if err != nil || st.Version != res.Version || st.TicketID == nil || *st.TicketID != tk.ID || st.Ticket == nil {
				t.Errorf("operation status = %+v, %v; want version %d on the ticket", st, err, res.Version)
			}
		})
		t.Run("InvalidInput", func(t *testing.T) {
			before, err := svc.GetTicket(ctx, tenantA, tk.Key)
			if err != nil {
				t.Fatal(err)
			}
			for name, u := range map[string]tickets.TicketUpdate{
				"NoField":          {},
				"OnlyEmptyLists":   {AddLabels: []string{}, RemoveLabels: []string{}},
				"OnlyIfVersion":    {IfVersion: ptr(int64(1))},
				"BlankTitle":       {Title: ptr("  ")},
				"LongAssignee":     {Assignee: ptr(strings.Repeat("a", tickets.MaxAssignee+1))},
				"BadPriority":      {Priority: ptr(tickets.Priority("asap"))},
				"BadStatus":        {Status: ptr(tickets.Status("done"))},
				"ZeroIfVersion":    {IfVersion: ptr(int64(0)), Title: ptr("x")},
				"BlankLabel":       {AddLabels: []string{" "}},
				"AddAndRemove":     {AddLabels: []string{"x"}, RemoveLabels: []string{"X"}},
				"TooManyLabels":    {AddLabels: strings.Fields("a b c d e f g h i j k l m n o p q r s")},
				"NULInDescription": {Description: ptr("a\x00b")},
			} {
				if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, u); !errors.Is(err, tickets.ErrInvalid) {
					t.Errorf("%s: %v, want ErrInvalid", name, err)
				}
			}
			for _, ref := range []string{"", "SUP", "not a ticket", "SUP-0"} {
				if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), ref, tickets.TicketUpdate{Title: ptr("x")}); !errors.Is(err, tickets.ErrInvalid) {
					t.Errorf("reference %q: %v, want ErrInvalid", ref, err)
				}
			}
			if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), "SUP-999", tickets.TicketUpdate{Title: ptr("x")}); !errors.Is(err, tickets.ErrNotFound) {
				t.Errorf("unknown ticket: %v, want ErrNotFound", err)
			}
			if after, _ := svc.GetTicket(ctx, tenantA, tk.Key); !reflect.DeepEqual(after, before) {
				t.Errorf("invalid updates changed the ticket: %+v", after)
			}
		})
	})
}

func TestComments(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		for _, body := range []string{"", "   ", strings.Repeat("é", tickets.MaxCommentBody+1), "a\x00b"} {
			if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tk.Key, body); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("body of %d bytes: %v, want ErrInvalid", len(body), err)
			}
		}
		var want []tickets.Comment
		for i := range 5 {
			id := newID()
			res, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "bob"}, ticketstest.OpID(id), tk.Key, fmt.Sprintf("  note %d\n", i))
			if err != nil || res.Comment.Body != fmt.Sprintf("note %d", i) || res.Comment.Author != "bob" || res.Comment.TicketID != tk.ID {
				t.Fatalf("comment %d = %+v, %v", i, res, err)
			}
			want = append(want, res.Comment)
			st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
			if err != nil || st.CommentID == nil || *st.CommentID != res.Comment.ID || st.TicketID == nil || *st.TicketID != tk.ID {
				t.Errorf("operation status = %+v, %v", st, err)
			}
		}
		var got []tickets.Comment
		for cursor := ""; ; {
			page, err := svc.ListComments(ctx, tenantA, strings.ToLower(tk.Key), tickets.ListParams{Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, page.Comments...)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("comments = %+v; want oldest first, as added:\n%+v", got, want)
		}
		if cur, err := svc.GetTicket(ctx, tenantA, tk.Key); err != nil || cur.Version != 1 {
			t.Errorf("ticket v%d (%v) after comments; comments must not change the version", cur.Version, err)
		}
		events, err := svc.ListEvents(ctx, tenantA, tk.Key, tickets.ListParams{})
		if err != nil || len(events.Events) != 6 || events.Events[5].Kind != tickets.EventCommented || *events.Events[5].CommentID != want[4].ID {
			t.Errorf("events = %+v, %v; want created then 5 commented", events, err)
		}
		// A cursor belongs to its ticket and tenant.
		first, err := svc.ListComments(ctx, tenantA, tk.Key, tickets.ListParams{Limit: 1})
		if err != nil || first.NextCursor == "" {
			t.Fatal(first, err)
		}
		other := newTicket(t, svc, tenantA)
		if _, err := svc.ListComments(ctx, tenantA, other.Key, tickets.ListParams{Cursor: first.NextCursor}); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("cursor on another ticket: %v, want ErrInvalid", err)
		}
		if _, err := svc.ListEvents(ctx, tenantA, tk.Key, tickets.ListParams{Cursor: first.NextCursor}); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("comment cursor on events: %v, want ErrInvalid", err)
		}
		if _, err := svc.ListComments(ctx, tenantB, tk.ID.String(), tickets.ListParams{}); !errors.Is(err, tickets.ErrNotFound) {
			t.Errorf("tenant B lists A's comments: %v, want ErrNotFound", err)
		}
	})
}

// TestUpdateAssigneeMeIsTheCaller: "me" means the caller in an update as in a
// list filter, and it is the same intent as naming the caller's subject.
func TestUpdateAssigneeMeIsTheCaller(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		id := newID()
		res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{Assignee: ptr(tickets.AssigneeMe)})
		if err != nil || res.Ticket.Assignee != "alice" {
			t.Fatalf("assign to me = %+v, %v; want assignee alice", res, err)
		}
		retry, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{Assignee: ptr("alice")})
		if err != nil || !retry.Replayed {
			t.Errorf("retry naming the subject = %+v, %v; want a replay of the same intent", retry, err)
		}
		page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Assignee: "alice"})
		if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != tk.ID {
			t.Errorf("tickets assigned to alice = %+v, %v; want the one assigned as me", page.Tickets, err)
		}
	})
}

// TestListAssigneeMeIsTheCaller: the service, not each transport, resolves
// the list filter "me" to the caller.
func TestListAssigneeMeIsTheCaller(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		mine, theirs := newTicket(t, svc, tenantA), newTicket(t, svc, tenantA)
		for who, tk := range map[string]tickets.Ticket{"alice": mine, "bob": theirs} {
			if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: who}, ticketstest.OpID(newID()), tk.Key,
				tickets.TicketUpdate{Assignee: ptr(tickets.AssigneeMe)}); err != nil {
				t.Fatalf("assign %s to %s: %v", tk.Key, who, err)
			}
		}
		alice := tickets.Caller{Tenant: tenantA, Subject: "alice"}
		page, err := svc.ListTickets(ctx, alice, tickets.ListTicketsParams{Assignee: tickets.AssigneeMe})
		if err != nil || len(page.Tickets) != 1 || page.Tickets[0].ID != mine.ID {
			t.Errorf("alice's \"me\" = %+v, %v; want %s only", page.Tickets, err, mine.Key)
		}
		bob := tickets.Caller{Tenant: tenantA, Subject: "bob"}
		if page, err := svc.ListTickets(ctx, bob, tickets.ListTicketsParams{Assignee: tickets.AssigneeMe}); err != nil ||
			len(page.Tickets) != 1 || page.Tickets[0].ID != theirs.ID {
			t.Errorf("bob's \"me\" = %+v, %v; want %s only", page.Tickets, err, theirs.Key)
		}
	})
}

// TestUpdateRetryWithNewerIfVersionReplays: a caller that lost the reply,
// re-read the ticket (now at the version its own change made) and retried
// with that version gets its recorded change back, not a conflict.
func TestUpdateRetryWithNewerIfVersionReplays(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		id := newID()
		first, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{IfVersion: ptr(int64(1)), Status: ptr(tickets.StatusInProgress)})
		if err != nil || first.Version != 2 {
			t.Fatalf("first update = %+v, %v", first, err)
		}
		retry, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), tk.Key, tickets.TicketUpdate{IfVersion: ptr(int64(2)), Status: ptr(tickets.StatusInProgress)})
		if err != nil || !retry.Replayed || retry.Version != 2 || retry.Ticket.Version != 2 {
			t.Errorf("retry with the re-read version = %+v, %v; want the replay of version 2", retry, err)
		}
	})
}
