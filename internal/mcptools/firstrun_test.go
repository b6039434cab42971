package mcptools_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestListProjectsTellsANewTenantWhatToDo: a tenant with no project cannot
// file anything, so the empty answer says how an operator creates one.
func TestListProjectsTellsANewTenantWhatToDo(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	cs := env.Connect(t, env.Token(t, "newco", authn.ScopeRead))
	empty := servertest.Decode[mcptools.ListProjectsOut](t, servertest.Call(t, cs, mcptools.ToolListProjects, nil))
	if len(empty.Projects) != 0 || !strings.Contains(empty.NextStep, `ticketd projects create --tenant "newco"`) {
		t.Fatalf("list_projects for a new tenant = %+v, want no projects and a next_step naming the command for newco", empty)
	}

	env.SeedProject(t, "newco")
	seeded := servertest.Decode[mcptools.ListProjectsOut](t, servertest.Call(t, cs, mcptools.ToolListProjects, nil))
	if len(seeded.Projects) != 1 || seeded.NextStep != "" {
		t.Fatalf("list_projects with a project = %+v, want it and no next_step", seeded)
	}
}

// TestDescriptionsStateTheRetentionWindow: the window promised to agents is
// the one prune keeps by default.
func TestDescriptionsStateTheRetentionWindow(t *testing.T) {
	t.Parallel()
	window := strconv.Itoa(int(operations.DefaultRetention/(24*time.Hour))) + " days"
	for _, tool := range mcptools.Tools() {
		switch name := tool.Def().Name; name {
		case mcptools.ToolCreateTicket, mcptools.ToolUpdateTicket, mcptools.ToolAddComment, mcptools.ToolGetOperationStatus:
			if !strings.Contains(tool.Def().Description, window) {
				t.Errorf("%s's description does not state the retention window, %s", name, window)
			}
		}
	}
}
