package webhooks_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/examples/webhook-receiver/receiver"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// ticketService returns the real ticket service writing its events to out
// and reading their deliveries from hooks, with project "support" (SUP) for
// the test tenant.
func ticketService(tb testing.TB, d *db.DB, hooks *webhooks.Service, out tickets.Outbox) *tickets.Service {
	tb.Helper()
	svc := tickets.NewService(d.Gorm, tickets.Options{Outbox: out, Deliveries: hooks})
	ticketstest.SeedSupport(tb, svc, tenant)
	return svc
}

func TestTicketWritesAreDeliveredSignedWithTheirEventID(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		rec := newRecorder(t)
		hooks := newService(t, d, fastOptions(), true)
		sub, secret := subscribe(t, hooks, rec.srv.URL+"/hooks")
		ref := rec.verifyWith(secret)
		var mu sync.Mutex
		var got []receiver.Event
		ref.Act = func(ev receiver.Event) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, ev)
			return nil
		}
		svc := ticketService(t, d, hooks, webhooks.TicketOutbox(hooks))

		created, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer on fire"})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		status := tickets.StatusInProgress
		updated, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(uuid.NewString()), created.Ticket.Key, tickets.TicketUpdate{Status: &status})
		if err != nil {
			t.Fatalf("update: %v", err)
		}
		for _, op := range []uuid.UUID{created.OperationID, updated.OperationID} {
			waitStatus(t, hooks, op, webhooks.StatusDelivered)
			st, err := svc.GetOperation(ctx, tenant, ticketstest.OpID(op.String()))
			if err != nil {
				t.Fatalf("get operation: %v", err)
			}
			want := tickets.Delivery{WebhookID: sub.ID, Status: webhooks.StatusDelivered, Attempts: 1}
			if len(st.Deliveries) != 1 || st.Deliveries[0] != want {
				t.Errorf("operation %s deliveries = %+v, want [%+v]", op, st.Deliveries, want)
			}
		}

		events, err := svc.ListEvents(ctx, tenant, created.Ticket.Key, tickets.ListParams{})
		if err != nil {
			t.Fatalf("list events: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || len(events.Events) != 2 {
			t.Fatalf("receiver acted on %d deliveries, ticket has %d events; want 2 and 2", len(got), len(events.Events))
		}
		// Delivery order is not part of the contract (workers run concurrently):
		// compare in the events' order, which the type fixes here.
		wantTypes := []string{webhooks.TypeTicketCreated, webhooks.TypeTicketUpdated}
		slices.SortFunc(got, func(a, b receiver.Event) int {
			return cmp.Compare(slices.Index(wantTypes, a.Type), slices.Index(wantTypes, b.Type))
		})
		wantOps := []uuid.UUID{created.OperationID, updated.OperationID}
		for i, ev := range got {
			var data struct {
				Ticket struct {
					Key     string `json:"key"`
					Status  string `json:"status"`
					Version int64  `json:"version"`
				} `json:"ticket"`
				Changes map[string]struct{ From, To string } `json:"changes"`
			}
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatalf("data of %s: %v", ev.Type, err)
			}
			if ev.Type != wantTypes[i] || ev.OperationID != wantOps[i].String() || ev.WebhookID != events.Events[i].ID.String() ||
				data.Ticket.Key != created.Ticket.Key || data.Ticket.Version != int64(i+1) {
				t.Errorf("delivery %d = %s op %s id %s ticket %+v; want %s op %s id %s (the ticket event's) %s v%d",
					i, ev.Type, ev.OperationID, ev.WebhookID, data.Ticket, wantTypes[i], wantOps[i], events.Events[i].ID, created.Ticket.Key, i+1)
			}
		}
		if ch := got[1].Data; !json.Valid(ch) || string(mustField(t, ch, "changes")) != `{"status":{"from":"open","to":"in_progress"}}` {
			t.Errorf("update's changes = %s", mustField(t, ch, "changes"))
		}
	})
}

func mustField(tb testing.TB, obj json.RawMessage, name string) json.RawMessage {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		tb.Fatalf("decode %s: %v", obj, err)
	}
	return m[name]
}

// failingOutbox enqueues for real and then fails, as a later step of the
// write's transaction might: the write must roll back with its outbox rows.
type failingOutbox struct{ tickets.Outbox }

var errAfterEnqueue = errors.New("failed after enqueue")

func (o failingOutbox) Enqueue(tx *gorm.DB, ev tickets.WriteEvent) error {
	if err := o.Outbox.Enqueue(tx, ev); err != nil {
		return err
	}
	return errAfterEnqueue
}

func TestRolledBackTicketWriteEnqueuesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		rec := newRecorder(t)
		hooks := newService(t, d, fastOptions(), false)
		subscribe(t, hooks, rec.srv.URL+"/hooks")
		svc := ticketService(t, d, hooks, failingOutbox{webhooks.TicketOutbox(hooks)})

		_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer on fire"})
		if !errors.Is(err, tickets.ErrUnavailable) {
			t.Fatalf("create with a failing outbox: %v, want ErrUnavailable", err)
		}
		for table, n := range map[string]int64{
			"tickets":            dbtest.CountRows(t, d, "tickets", tenant),
			"webhook_deliveries": dbtest.CountRows(t, d, "webhook_deliveries", tenant),
		} {
			if n != 0 {
				t.Errorf("%s rows after rollback: %d, want 0", table, n)
			}
		}
		if jobs := dbtest.CountRows(t, d, "river_job", ""); jobs != 0 {
			t.Errorf("river jobs after rollback: %d, want 0", jobs)
		}
	})
}

// TestWebhookTicketIsTheAPITicket checks that a receiver reads a ticket and
// a comment exactly as the API answers them (contract.FromTicket and
// FromComment): an unassigned ticket's assignee is there as null, not left
// out, as the webhook's own ticket shape once did.
func TestWebhookTicketIsTheAPITicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		rec := newRecorder(t)
		hooks := newService(t, d, fastOptions(), true)
		_, secret := subscribe(t, hooks, rec.srv.URL+"/hooks")
		ref := rec.verifyWith(secret)
		var mu sync.Mutex
		got := map[string]json.RawMessage{}
		ref.Act = func(ev receiver.Event) error {
			mu.Lock()
			defer mu.Unlock()
			got[ev.Type] = ev.Data
			return nil
		}
		svc := ticketService(t, d, hooks, webhooks.TicketOutbox(hooks))
		created, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "alice"}, ticketstest.OpID(uuid.NewString()), tickets.NewTicket{ProjectID: "support", Title: "Printer on fire"})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		commented, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(uuid.NewString()), created.Ticket.Key, "on it")
		if err != nil {
			t.Fatalf("comment: %v", err)
		}
		for _, op := range []uuid.UUID{created.OperationID, commented.OperationID} {
			waitStatus(t, hooks, op, webhooks.StatusDelivered)
		}
		apiTicket, err := json.Marshal(contract.FromTicket(created.Ticket))
		if err != nil {
			t.Fatal(err)
		}
		apiComment, err := json.Marshal(contract.FromComment(commented.Comment))
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for typ, data := range got {
			if ticket := mustField(t, data, "ticket"); string(ticket) != string(apiTicket) {
				t.Errorf("%s ticket = %s\nthe API's = %s", typ, ticket, apiTicket)
			}
		}
		if comment := mustField(t, got[webhooks.TypeCommentCreated], "comment"); string(comment) != string(apiComment) {
			t.Errorf("comment.created comment = %s\nthe API's = %s", comment, apiComment)
		}
		if a := mustField(t, got[webhooks.TypeTicketCreated], "ticket"); !strings.Contains(string(a), `"assignee":null`) {
			t.Errorf("unassigned ticket in ticket.created = %s; want \"assignee\":null", a)
		}
		if len(got) != 2 {
			t.Errorf("receiver got %d event types, want ticket.created and comment.created", len(got))
		}
	})
}
