package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

var update = flag.Bool("update", false, "rewrite the tool snapshots in testdata/")

var toolNames = []string{
	mcptools.ToolAddComment, mcptools.ToolBulkUpdateTickets, mcptools.ToolCreateTicket, mcptools.ToolGetOperationStatus, mcptools.ToolGetTicket,
	mcptools.ToolLinkTickets, mcptools.ToolListComments, mcptools.ToolListProjects, mcptools.ToolListTickets, mcptools.ToolListUsers, mcptools.ToolPreviewTicket,
	mcptools.ToolUpdateTicket,
}

// defaultToolNames are the tools of the default toolsets: all but
// bulk_update_tickets.
var defaultToolNames = slices.DeleteFunc(slices.Clone(toolNames), func(n string) bool {
	return n == mcptools.ToolBulkUpdateTickets || n == mcptools.ToolListUsers
})

// listTools returns tools/list as a client sees it over HTTP.
func listTools(t *testing.T) []*mcp.Tool {
	t.Helper()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: allTools})
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

// The tools/list budgets (docs/contract.md#lists-and-the-context-budget)
// for a read+write token: every client that loads tool definitions pays
// them on every turn. The contract's figure for the default toolsets is
// 20 KiB, with link_tickets in the default links set (DESIGN §23).
const (
	defaultToolsBudget = 20 << 10
	allToolsBudget     = 28 << 10
)

// rawToolsList returns the bytes of a tools/list answer as they travel, at
// protocol version, from a server of toolsets, for a token with scopes.
func rawToolsList(t *testing.T, version, sets string, scopes ...string) []byte {
	t.Helper()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Edge: server.Edge{Toolsets: toolsets(sets)}})
	meta := ""
	if version >= "2026-07-28" {
		meta = `"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}},`
	}
	body := `{"jsonrpc":"2.0",` + meta + `"id":1,"method":"tools/list"}`
	req, err := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", "tools/list")
	req.Header.Set("Authorization", "Bearer "+env.Token(t, "acme", scopes...))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %v %s", resp.StatusCode, err, b)
	}
	return b
}

// TestToolsListFitsTheBudget measures tools/list as a read+write token gets
// it over HTTP, at both protocol versions, from a server of the default
// toolsets and of all of them, and fails past the budget, naming what each
// tool costs.
func TestToolsListFitsTheBudget(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sets   string
		tools  int
		budget int
	}{
		{mcptools.DefaultToolsets, len(defaultToolNames), defaultToolsBudget},
		{mcptools.ToolsetAll, len(toolNames), allToolsBudget},
	} {
		for _, version := range versions {
			b := rawToolsList(t, version, c.sets, authn.ScopeRead, authn.ScopeWrite)
			var msg struct {
				Result struct {
					Tools []json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(b, &msg); err != nil || len(msg.Result.Tools) != c.tools {
				t.Fatalf("tools/list of %s at %s: %v, %d tools, want %d: %s", c.sets, version, err, len(msg.Result.Tools), c.tools, b)
			}
			t.Logf("tools/list of %s at %s: %d bytes for %d tools (budget %d)", c.sets, version, len(b), len(msg.Result.Tools), c.budget)
			if len(b) <= c.budget {
				continue
			}
			for _, tool := range msg.Result.Tools {
				var parts map[string]json.RawMessage
				_ = json.Unmarshal(tool, &parts)
				t.Logf("%s: %d bytes (description %d, input %d, output %d)", parts["name"], len(tool),
					len(parts["description"]), len(parts["inputSchema"]), len(parts["outputSchema"]))
			}
			t.Errorf("tools/list of %s at %s is %d bytes, over the %d-byte budget", c.sets, version, len(b), c.budget)
		}
	}
}

// TestSchemasArePortable applies the rules `inspector --cli --strict`
// (@modelcontextprotocol/inspector 2.12) applies to tool schemas, so a
// schema that would make it exit 6, or warn, fails here first: no bare
// true or false where a schema is expected (false is fine as
// additionalProperties), no type arrays (nullable is an anyOf with a null
// branch), no schema that constrains nothing, and no $ref outside its own
// document.
func TestSchemasArePortable(t *testing.T) {
	t.Parallel()
	var msg struct {
		Result struct {
			Tools []struct {
				Name         string `json:"name"`
				InputSchema  any    `json:"inputSchema"`
				OutputSchema any    `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(rawToolsList(t, "2026-07-28", mcptools.ToolsetAll, authn.ScopeRead, authn.ScopeWrite), &msg); err != nil {
		t.Fatal(err)
	}
	for _, tool := range msg.Result.Tools {
		for kind, s := range map[string]any{"inputSchema": tool.InputSchema, "outputSchema": tool.OutputSchema} {
			for _, problem := range lintSchema(s, kind, "") {
				t.Errorf("%s: %s", tool.Name, problem)
			}
		}
	}
}

// Keywords whose value is one schema, a list or a map of them; and the
// ones that constrain an instance (a schema with none accepts anything).
var (
	schemaKeywords = []string{"items", "contains", "not", "propertyNames", "if", "then", "else",
		"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems", "contentSchema"}
	schemaListKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	schemaMapKeywords  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
	booleanAllowed     = []string{"additionalProperties", "unevaluatedProperties", "additionalItems", "unevaluatedItems"}
	constraining       = []string{"type", "enum", "const", "multipleOf", "maximum", "exclusiveMaximum", "minimum",
		"exclusiveMinimum", "maxLength", "minLength", "pattern", "format", "maxItems", "minItems", "uniqueItems",
		"maxProperties", "minProperties", "required", "allOf", "anyOf", "oneOf", "not", "items", "prefixItems",
		"contains", "properties", "patternProperties", "additionalProperties", "propertyNames", "$ref"}
)

func lintSchema(s any, path, keyword string) []string {
	switch v := s.(type) {
	case bool:
		if slices.Contains(booleanAllowed, keyword) {
			return nil
		}
		return []string{fmt.Sprintf("%s: bare %v where a schema is expected", path, v)}
	case map[string]any:
		var problems []string
		if _, isArray := v["type"].([]any); isArray {
			problems = append(problems, fmt.Sprintf("%s: type is an array %v; use anyOf branches", path, v["type"]))
		}
		if r, ok := v["$ref"].(string); ok && !strings.HasPrefix(r, "#") {
			problems = append(problems, fmt.Sprintf("%s: $ref %q points outside the schema", path, r))
		}
		if keyword != "not" && !slices.ContainsFunc(constraining, func(k string) bool { _, ok := v[k]; return ok }) {
			problems = append(problems, fmt.Sprintf("%s: constrains nothing (the object form of true)", path))
		}
		for _, k := range schemaKeywords {
			if sub, ok := v[k]; ok {
				problems = append(problems, lintSchema(sub, path+"."+k, k)...)
			}
		}
		for _, k := range schemaListKeywords {
			list, _ := v[k].([]any)
			for i, sub := range list {
				problems = append(problems, lintSchema(sub, fmt.Sprintf("%s.%s[%d]", path, k, i), k)...)
			}
		}
		for _, k := range schemaMapKeywords {
			m, _ := v[k].(map[string]any)
			for name, sub := range m {
				problems = append(problems, lintSchema(sub, path+"."+k+"."+name, k)...)
			}
		}
		return problems
	}
	return nil
}

// TestListItemIsASummaryOrATicket: list_tickets' strict item schema (the
// one its results are checked against) accepts a
// summary and a full ticket, and nothing between (a summary with some of
// the ticket's other fields).
func TestListItemIsASummaryOrATicket(t *testing.T) {
	t.Parallel()
	var strict any
	for _, tool := range mcptools.Tools() {
		if tool.Name == mcptools.ToolListTickets {
			strict = mcptools.StrictOutputSchema(tool)
		}
	}
	b, err := json.Marshal(strict)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	summary := map[string]any{"id": "6f1c", "key": "SUP-1", "project_id": "support", "title": "t", "status": "open",
		"priority": "normal", "assignee": nil, "labels": []any{}, "version": 1, "updated_at": "2026-07-28T12:00:00Z"}
	full := maps.Clone(summary)
	full["description"], full["reporter"], full["created_at"] = "d", "alice", "2026-07-28T12:00:00Z"
	partial := maps.Clone(summary)
	partial["description"] = "d"
	for name, item := range map[string]map[string]any{"summary": summary, "full": full, "partial": partial} {
		err := r.Validate(map[string]any{"tickets": []any{item}})
		if (err == nil) != (name != "partial") {
			t.Errorf("%s item: validation error %v", name, err)
		}
	}
}
