package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots in testdata/")

var toolNames = []string{
	mcptools.ToolAddComment, mcptools.ToolBulkUpdateTickets, mcptools.ToolCreateTicket, mcptools.ToolGetOperationStatus, mcptools.ToolGetTicket,
	mcptools.ToolListComments, mcptools.ToolListProjects, mcptools.ToolListTickets, mcptools.ToolPreviewTicket,
	mcptools.ToolUpdateTicket,
}

// listTools returns tools/list as a client sees it over HTTP.
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	// tools/list shows a token only the tools it may call: all of them.
	cs := env.Connect(t, env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	return res.Tools
}

// TestToolSnapshots compares every tool's name, title, description, schemas
// and annotations with testdata/<tool>.json, so any change to what models
// see shows up in review. Run with -update to accept a change.
func TestToolSnapshots(t *testing.T) {
	t.Parallel()
	tools := listTools(t)
	var got []string
	for _, tool := range tools {
		got = append(got, tool.Name)
		b, err := json.MarshalIndent(tool, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("testdata", tool.Name+".json")
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/mcptools -update to create it)", err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("tool %s differs from %s (run with -update if the change is intended):\n%s", tool.Name, path, b)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, toolNames) {
		t.Errorf("tools = %v, want %v", got, toolNames)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(toolNames) && !*update {
		t.Errorf("testdata holds %d snapshots for %d tools: remove stale ones (%v)", len(files), len(toolNames), files)
	}
}

// TestNoToolTakesATenant guards the rule that the tenant comes only from the
// token: no input schema may name one, and every schema refuses unknown
// arguments.
func TestNoToolTakesATenant(t *testing.T) {
	t.Parallel()
	for _, tool := range listTools(t) {
		b, err := json.Marshal(tool.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		var schema struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		}
		if err := json.Unmarshal(b, &schema); err != nil {
			t.Fatal(err)
		}
		for name := range schema.Properties {
			if strings.Contains(strings.ToLower(name), "tenant") {
				t.Errorf("%s has a tenant argument %q", tool.Name, name)
			}
		}
		if schema.AdditionalProperties == nil || *schema.AdditionalProperties {
			t.Errorf("%s input schema allows unknown arguments: %s", tool.Name, b)
		}
	}
}
