package tickets_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

func TestAssigneeMustBeAUser(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		tk := newTicket(t, svc, tenantA)
		caller := tickets.Caller{Tenant: tenantA, Subject: "newcomer"}

		t.Run("UnknownRefusedNothingWritten", func(t *testing.T) {
			before := countOperations(t, d, tenantA)
			_, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Assignee: ptr("bobb")})
			if !errors.Is(err, tickets.ErrUnknownAssignee) || !errors.Is(err, tickets.ErrInvalid) {
				t.Fatalf("err = %v, want an unknown assignee", err)
			}
			_, err = svc.BulkUpdateTickets(ctx, caller, ticketstest.OpID(newID()), tickets.BulkUpdate{Refs: []string{tk.Key}, Update: tickets.TicketUpdate{Assignee: ptr("bobb")}})
			if !errors.Is(err, tickets.ErrUnknownAssignee) {
				t.Fatalf("bulk err = %v, want an unknown assignee", err)
			}
			now, err := svc.GetTicket(ctx, tenantA, tk.Key)
			if err != nil || now.Version != tk.Version || countOperations(t, d, tenantA) != before {
				t.Errorf("a refused assignee wrote something: %+v, %v", now, err)
			}
		})

		t.Run("MeIsTheCallerAndEnrollsIt", func(t *testing.T) {
			res, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Assignee: ptr(tickets.AssigneeMe)})
			if err != nil || res.Ticket.Assignee != "newcomer" {
				t.Fatalf("assign me = %+v, %v", res.Ticket, err)
			}
			users, err := svc.People().List(ctx, tenantA, "NEWCOM")
			if err != nil || len(users) != 1 || users[0].ID != "newcomer" || !users[0].Active {
				t.Errorf("list_users newcom = %+v, %v; want the caller, enrolled by its write", users, err)
			}
		})

		t.Run("InactiveRefused", func(t *testing.T) {
			off := false
			if _, err := svc.People().Update(ctx, tenantA, "sam", people.Patch{Active: &off}); err != nil {
				t.Fatal(err)
			}
			_, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Assignee: ptr("sam")})
			if !errors.Is(err, tickets.ErrUnknownAssignee) {
				t.Fatalf("err = %v, want an inactive user refused", err)
			}
		})

		t.Run("OtherTenantsUserRefused", func(t *testing.T) {
			if _, err := svc.People().Create(ctx, tenantB, people.User{ID: "globex-only"}); err != nil {
				t.Fatal(err)
			}
			_, err := svc.UpdateTicket(ctx, caller, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Assignee: ptr("globex-only")})
			if !errors.Is(err, tickets.ErrUnknownAssignee) {
				t.Fatalf("err = %v, want another tenant's user refused", err)
			}
		})
	})
}
