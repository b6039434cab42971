package mcptools_test

import (
	"slices"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/mcptools"
)

// TestToolsListIsWhatIsServed: Tools, the list the HTTP edge will use to map
// a tool to its scope, is exactly what tools/list shows, with the scope each
// tool checks.
func TestToolsListIsWhatIsServed(t *testing.T) {
	t.Parallel()
	wantScope := map[string]string{
		mcptools.ToolCreateTicket: authn.ScopeWrite, mcptools.ToolPreviewTicket: authn.ScopeRead,
		mcptools.ToolGetOperationStatus: authn.ScopeRead, mcptools.ToolGetTicket: authn.ScopeRead,
		mcptools.ToolListTickets: authn.ScopeRead, mcptools.ToolListProjects: authn.ScopeRead,
		mcptools.ToolUpdateTicket: authn.ScopeWrite, mcptools.ToolAddComment: authn.ScopeWrite,
		mcptools.ToolListComments: authn.ScopeRead, mcptools.ToolBulkUpdateTickets: authn.ScopeWrite,
		mcptools.ToolLinkTickets: authn.ScopeWrite, mcptools.ToolListUsers: authn.ScopeRead,
	}
	var names []string
	for _, tool := range mcptools.Tools() {
		names = append(names, tool.Name)
		if tool.Def().Name != tool.Name || tool.Scope != wantScope[tool.Name] {
			t.Errorf("tool %s: definition %q, scope %q; want scope %q", tool.Name, tool.Def().Name, tool.Scope, wantScope[tool.Name])
		}
	}
	var served []string
	for _, tool := range listTools(t) {
		served = append(served, tool.Name)
	}
	slices.Sort(names)
	slices.Sort(served)
	if !slices.Equal(names, served) {
		t.Errorf("Tools() = %v, tools/list = %v", names, served)
	}
}
