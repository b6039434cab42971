// Package ticketstest is test support for code built on tickets.Service:
// the project most tests file their tickets into, seeded in one call.
package ticketstest

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/internal/tickets"
)

// Support is the project the tests' tickets go into: ID "support", key
// SUP, so their keys read SUP-1, SUP-2, …
var Support = tickets.Project{ID: "support", Key: "SUP", Name: "Support"}

// SeedSupport gives each tenant the Support project through svc, failing
// the test if it cannot.
func SeedSupport(tb testing.TB, svc *tickets.Service, tenants ...string) {
	tb.Helper()
	for _, tenant := range tenants {
		if _, err := svc.CreateProject(context.Background(), tenant, Support); err != nil {
			tb.Fatalf("seed project %s for %s: %v", Support.ID, tenant, err)
		}
	}
}
