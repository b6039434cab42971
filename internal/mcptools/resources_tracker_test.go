package mcptools_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// TestTrackerProjectResourceNamesWhereItsIssuesLive: project:// of a
// Jira-backed project names its tracker by kind, project key and site.
func TestTrackerProjectResourceNamesWhereItsIssuesLive(t *testing.T) {
	t.Parallel()
	site := jiratest.Start(t, jiratest.New("bot@acme.test", "tok"))
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Tracked: jiratest.Tracked("bot@acme.test:tok", jira.Options{})})
	if _, err := env.Service.CreateProject(context.Background(), "acme", tickets.Project{ID: "ops", Key: "OPSX", Name: "Operations",
		Backend: jiratest.Backend(site, "OPS")}); err != nil {
		t.Fatal(err)
	}
	cs, err := servertest.DialWith(env.Endpoint, servertest.Bearer(env.Token(t, "acme", authn.ScopeRead), http.DefaultTransport), versions[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	md, err := readResource(cs, "project://ops")
	if want := "- tracker: jira OPS on " + site + "\n"; err != nil || !strings.Contains(md, want) {
		t.Errorf("project://ops: %v; want %q in\n%s", err, want, md)
	}
}
