package mcptools_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestEveryToolIsInOneToolset: a tool added to Tools without a set would
// never be served; one in two sets would be counted twice.
func TestEveryToolIsInOneToolset(t *testing.T) {
	t.Parallel()
	for _, tool := range mcptools.Tools() {
		var in []string
		for _, set := range toolsets(mcptools.ToolsetAll).Names() {
			if slices.Contains(servedNames(t, set), tool.Name) {
				in = append(in, set)
			}
		}
		if len(in) != 1 {
			t.Errorf("tool %s is in toolsets %v, want exactly one", tool.Name, in)
		}
	}
}

// servedNames lists what a server of the toolsets sets would serve a
// read+write token, without serving it.
func servedNames(t *testing.T, sets string) []string {
	t.Helper()
	scopeFor := mcptools.ScopeFor(mcptools.Options{Toolsets: toolsets(sets)})
	var names []string
	for _, tool := range mcptools.Tools() {
		if _, ok := scopeFor(tool.Name); ok {
			names = append(names, tool.Name)
		}
	}
	return names
}

func TestParseToolsets(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                       mcptools.DefaultToolsets,
		" Bulk , tickets ":       "tickets,bulk",
		"all":                    "tickets,comments,links,bulk,people",
		"people,all,":            "tickets,comments,links,bulk,people",
		mcptools.DefaultToolsets: mcptools.DefaultToolsets,
	} {
		got, err := mcptools.ParseToolsets(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseToolsets(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	_, err := mcptools.ParseToolsets("tickets,bulkk")
	if err == nil || !strings.Contains(err.Error(), `"bulkk"`) || !strings.Contains(err.Error(), "people") || strings.Contains(err.Error(), "\n") {
		t.Errorf("an unknown toolset: %v, want one line naming it and the known sets", err)
	}
}

// TestToolsetsChangeToolsList serves the default toolsets, one set, and
// all of them read-only, and checks tools/list and tools/call follow:
// a tool outside the sets is neither listed nor callable.
func TestToolsetsChangeToolsList(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	for _, c := range []struct {
		edge server.Edge
		want []string
	}{
		{server.Edge{}, defaultToolNames},
		{server.Edge{Toolsets: toolsets("comments")}, []string{mcptools.ToolAddComment, mcptools.ToolListComments}},
		{server.Edge{Toolsets: toolsets("all"), ReadOnly: true}, []string{
			mcptools.ToolGetOperationStatus, mcptools.ToolGetTicket, mcptools.ToolListComments, mcptools.ToolListProjects,
			mcptools.ToolListTickets, mcptools.ToolListUsers, mcptools.ToolPreviewTicket,
		}},
	} {
		env := servertest.Start(t, d, servertest.Options{Edge: c.edge})
		cs := env.Connect(t, env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite))
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("toolsets %q (read-only %v): tools/list = %v, want %v", c.edge.Toolsets, c.edge.ReadOnly, got, c.want)
		}
		if !slices.Contains(c.want, mcptools.ToolBulkUpdateTickets) {
			if _, err := servertest.TryCall(cs, mcptools.ToolBulkUpdateTickets, map[string]any{
				"operation_id": newOperationID(t), "ids": []string{"SUP-1"}, "status": "closed",
			}); err == nil || !strings.Contains(err.Error(), "unknown tool") {
				t.Errorf("toolsets %q: bulk_update_tickets called: %v, want unknown tool", c.edge.Toolsets, err)
			}
		}
	}
}
