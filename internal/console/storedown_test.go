package console_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/tickets"
)

// TestStoreDownShowsNoDriverText: with the database unreachable, a page
// says unavailable and what to do, and none of what the driver said (its
// user, database, host and port), which only the log may hold.
func TestStoreDownShowsNoDriverText(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: every query fails to connect, and the
	// driver's error names the user, the database and the address.
	dead, err := gorm.Open(postgres.Open("postgres://ticketd_owner:hunter2@127.0.0.1:1/ticketd_prod?sslmode=disable&connect_timeout=2"),
		&gorm.Config{DisableAutomaticPing: true, TranslateError: true})
	if err != nil {
		t.Fatal(err)
	}
	// Sessions live in a store that answers, so the pages behind sign-in
	// are reached; the ticket store is the one that is down.
	e := serveConsole(t, tickets.NewService(dead, tickets.Options{}), dbtest.SQLite(t).Gorm, console.Config{})
	c := e.signedIn(t, token(t, "alice", time.Now(), authn.ScopeRead, authn.ScopeWrite))

	for _, path := range []string{"/console/tickets", "/console/tickets/SUP-1", "/console/operations", "/console/projects"} {
		p := e.get(t, c, path)
		row := errcode.Lookup(errcode.Unavailable)
		if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, string(errcode.Unavailable)) {
			t.Errorf("%s with the store down: status %d, want 503 unavailable; body:\n%s", path, p.status, p.body)
		}
		if !strings.Contains(p.body, row.PersonStep) {
			t.Errorf("%s with the store down does not say what to do (%q)", path, row.PersonStep)
		}
		for _, leak := range []string{"ticketd_owner", "ticketd_prod", "127.0.0.1:1", "dial", "connect"} {
			if strings.Contains(p.body, leak) {
				t.Errorf("%s with the store down shows the driver's %q:\n%s", path, leak, p.body)
			}
		}
	}
}
