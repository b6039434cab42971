// Package ticketstest is test support for code built on tickets.Service:
// the project most tests file their tickets into, seeded in one call, and
// operation IDs from the strings tests make them from.
package ticketstest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Support is the project the tests' tickets go into: ID "support", key
// SUP, so their keys read SUP-1, SUP-2, …
var Support = tickets.Project{ID: "support", Key: "SUP", Name: "Support"}

// People are the users SeedSupport adds to each tenant's directory, the
// assignees the tests use.
var People = []string{"alice", "bob", "carol", "sam", "agent", "operator@acme"}

// SeedSupport gives each tenant the Support project and People through
// svc, failing the test if it cannot.
func SeedSupport(tb testing.TB, svc *tickets.Service, tenants ...string) {
	tb.Helper()
	for _, tenant := range tenants {
		if _, err := svc.CreateProject(context.Background(), tenant, Support); err != nil {
			tb.Fatalf("seed project %s for %s: %v", Support.ID, tenant, err)
		}
		for _, id := range People {
			if _, err := svc.People().Create(context.Background(), tenant, people.User{ID: id}); err != nil && !errors.Is(err, tickets.ErrExists) {
				tb.Fatalf("seed user %s for %s: %v", id, tenant, err)
			}
		}
	}
}

// OpID is s as an operation ID, for tests, whose IDs are fresh UUIDs
// (uuid.NewString): a string that does not parse is the test's own bug, so
// it panics.
func OpID(s string) operations.ID {
	id, err := operations.ParseID(s)
	if err != nil {
		panic(fmt.Sprintf("ticketstest.OpID(%q): %v", s, err))
	}
	return id
}
