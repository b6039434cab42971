package main

import (
	"context"
	"database/sql"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// TestSeedIsWhatCreateWouldHaveWritten seeds tickets with SQL and then asks
// ticketd's own service about them: a replay of a seeded operation must be
// recognised as that operation, the next create must continue the
// numbering, and lists must page through seeded tickets newest first.
func TestSeedIsWhatCreateWouldHaveWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := dbtest.PostgresURL(t)
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	spec := seedSpec{Tenant: devTenant, Project: devProjectID, Key: devProjectKey, Name: "Support", Tickets: 50}
	if err := seedTickets(ctx, raw, spec); err != nil {
		t.Fatal(err)
	}
	// A second batch continues the numbers of the first.
	spec.Tickets = 10
	if err := seedTickets(ctx, raw, spec); err != nil {
		t.Fatal(err)
	}
	var opID, key string
	if err := raw.QueryRowContext(ctx, `SELECT o.operation_id::text, t.key FROM tickets t
		JOIN operations o ON o.tenant_id = t.tenant_id AND o.operation_id = t.operation_id AND o.result_id = t.id::text
		WHERE t.number = 3`).Scan(&opID, &key); err != nil {
		t.Fatalf("seeded ticket 3 and its operation: %v", err)
	}

	store, err := db.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	svc := tickets.NewService(store.Gorm, tickets.Options{})
	seeded := tickets.NewTicket{ProjectID: devProjectID, Title: "seeded ticket 3", Priority: tickets.PriorityNormal, Labels: []string{"seed"}}
	replay, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: devTenant, Subject: "someone"}, ticketstest.OpID(opID), seeded)
	if err != nil {
		t.Fatalf("replay of a seeded operation: %v", err)
	}
	if !replay.Replayed || replay.Ticket.Key != "SUP-3" || key != "SUP-3" || replay.Ticket.Reporter != "seed" {
		t.Errorf("replay = %+v (row key %s), want the seeded SUP-3 replayed", replay, key)
	}
	fresh, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: devTenant, Subject: "someone"}, ticketstest.OpID("3b241101-e2bb-4255-8caf-4136c566a962"), tickets.NewTicket{ProjectID: devProjectID, Title: "after the seed"})
	if err != nil || fresh.Replayed || fresh.Ticket.Key != "SUP-61" {
		t.Fatalf("create after the seed = %+v, %v; want SUP-61", fresh, err)
	}
	page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: devTenant}, tickets.ListTicketsParams{ProjectID: devProjectID, Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Tickets) != 20 || page.Tickets[0].Key != "SUP-61" || page.Tickets[1].Key != "SUP-60" || page.Tickets[19].Key != "SUP-42" || page.NextCursor == "" {
		keys := make([]string, len(page.Tickets))
		for i, tk := range page.Tickets {
			keys[i] = tk.Key
		}
		t.Errorf("list = %v (next %q), want SUP-61 down to SUP-42 and a cursor", keys, page.NextCursor)
	}
}
