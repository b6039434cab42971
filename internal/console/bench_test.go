package console_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// BenchmarkPages measures a signed-in page view end to end over loopback:
// token verification, the service's reads on SQLite, and rendering.
func BenchmarkPages(b *testing.B) {
	e := newEnv(b, console.Config{})
	ctx := context.Background()
	var key string
	for i := range 50 {
		res, err := e.svc.CreateTicket(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(b)), tickets.NewTicket{
			ProjectID: "support", Title: fmt.Sprintf("Ticket number %d", i), Labels: []string{"bench"}})
		if err != nil {
			b.Fatal(err)
		}
		key = res.Ticket.Key
	}
	for i := range 10 {
		if _, err := e.svc.AddComment(ctx, tickets.Caller{Tenant: tenant, Subject: "bob"}, ticketstest.OpID(newID(b)), key, fmt.Sprintf("comment %d", i)); err != nil {
			b.Fatal(err)
		}
	}
	c := e.signedIn(b, token(b, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))
	for _, path := range []string{"/console/tickets", "/console/tickets?q=number", "/console/tickets/" + key} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				resp, err := c.Get(e.srv.URL + path)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
		})
	}
}
