package mcptools_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestBadInputIsRejectedAndNothingIsWritten: every invalid create_ticket
// call is a tool error with code invalid_input and a message naming the
// problem, and leaves neither a ticket nor an operation record behind.
func TestBadInputIsRejectedAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	labels21 := make([]string, 21)
	for i := range labels21 {
		labels21[i] = "label" + strings.Repeat("x", i)
	}
	args := ticketArgs("0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f")
	cases := []struct {
		name    string
		args    map[string]any
		mention string // the message must contain this
	}{
		{"MissingOperationID", without(args, "operation_id"), "operation_id"},
		{"GarbledOperationID", with(args, "operation_id", "not-a-uuid"), "operation_id"},
		{"NilUUID", with(args, "operation_id", "00000000-0000-0000-0000-000000000000"), "operation_id"},
		{"VersionOneUUID", with(args, "operation_id", "6ba7b810-9dad-11d1-80b4-00c04fd430c8"), "operation_id"},
		{"BracedUUID", with(args, "operation_id", "{0190a6e5-3f2b-7c1d-9e4f-5a6b7c8d9e0f}"), "operation_id"},
		{"TenantArgument", with(args, "tenant_id", "globex"), "tenant"},
		{"EmptyTitle", with(args, "title", ""), "title"},
		{"BlankTitle", with(args, "title", "   "), "title"},
		{"TitleTooLong", with(args, "title", strings.Repeat("x", 201)), "title"},
		{"UnknownPriority", with(args, "priority", "critical"), "priority"},
		{"TooManyLabels", with(args, "labels", labels21), "labels"},
		{"BlankLabel", with(args, "labels", []string{"ok", "  "}), "labels[1]"},
		{"UnknownProject", with(args, "project_id", "billing"), "support"},
	}
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, c.args)
				e := toolError(t, res, "invalid_input")
				t.Log(text(res))
				if e.Error.Retryable {
					t.Errorf("invalid input marked retryable")
				}
				if !strings.Contains(e.Error.Message, c.mention) {
					t.Errorf("message %q does not mention %q", e.Error.Message, c.mention)
				}
				// A well-formed ID is echoed even when the service rejects the rest.
				if c.args["operation_id"] == args["operation_id"] && e.OperationID != args["operation_id"] {
					t.Errorf("error names operation_id %q, want %q", e.OperationID, args["operation_id"])
				}
			})
		}
		if n, m := env.CountTickets(t, tenant), env.CountOperations(t, tenant); n != 0 || m != 0 {
			t.Errorf("bad input wrote %d tickets and %d operation records", n, m)
		}
		// The operation ID used by the rejected calls is still usable.
		created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
	})
}

func TestTenantArgumentIsRejectedByEveryTool(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	calls := map[string]map[string]any{
		mcptools.ToolCreateTicket:       ticketArgs(newOperationID(t)),
		mcptools.ToolPreviewTicket:      ticketArgs(newOperationID(t)),
		mcptools.ToolGetOperationStatus: {"operation_id": newOperationID(t)},
		mcptools.ToolGetTicket:          {"id": "SUP-1"},
		mcptools.ToolListTickets:        {},
		mcptools.ToolListProjects:       {},
	}
	for tool, args := range calls {
		e := toolError(t, servertest.Call(t, cs, tool, with(args, "tenant_id", "globex")), "invalid_input")
		if !strings.Contains(e.Error.Message, "access token") {
			t.Errorf("%s: message %q should say the tenant comes from the token", tool, e.Error.Message)
		}
	}
	if n := env.CountTickets(t, tenant) + env.CountTickets(t, "globex"); n != 0 {
		t.Errorf("%d tickets written", n)
	}
}

// TestScopesAreCheckedPerTool: a read-only token reaches the server and the
// read tools, but create_ticket answers forbidden and writes nothing, also
// for an operation ID that a writer already used (a replay is re-authorised).
// Over HTTP the edge refuses such a call first with a 403 step-up (see
// internal/server); over stdio the tool's own check answers, as here.
func TestScopesAreCheckedPerTool(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	stdioAs := func(scope string) *mcp.ClientSession {
		cs, _ := serveStdio(t, env.Service, authn.Principal{Tenant: tenant, Subject: "agent", Scopes: []string{scope}, Expires: time.Now().Add(time.Hour)})
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	reader := stdioAs(authn.ScopeRead)
	args := ticketArgs(newOperationID(t))

	e := toolError(t, servertest.Call(t, reader, mcptools.ToolCreateTicket, args), "forbidden")
	if !strings.Contains(e.Error.Message, authn.ScopeWrite) || e.Error.Retryable {
		t.Errorf("forbidden = %+v, want the missing scope named and not retryable", e)
	}
	if n := env.CountOperations(t, tenant); n != 0 {
		t.Errorf("forbidden call wrote %d operation records", n)
	}
	projects := servertest.Decode[mcptools.ListProjectsOut](t, servertest.Call(t, reader, mcptools.ToolListProjects, nil))
	if len(projects.Projects) != 1 || projects.Projects[0].ID != "support" {
		t.Errorf("list_projects with a read token = %+v", projects)
	}

	created(t, servertest.Call(t, env.Connect(t, writer(t, env)), mcptools.ToolCreateTicket, args))
	toolError(t, servertest.Call(t, reader, mcptools.ToolCreateTicket, args), "forbidden")

	writeOnly := stdioAs(authn.ScopeWrite)
	toolError(t, servertest.Call(t, writeOnly, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": args["operation_id"]}), "forbidden")
	if n := env.CountTickets(t, tenant); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestArgumentNamesAreCaseSensitive: an argument named in another case
// ("Title" for title) is refused as an unknown property, as the SDK's
// case-sensitive decoder refused it, although encoding/json, which now
// decodes the arguments, matches names case-insensitively; nothing is
// written.
func TestArgumentNamesAreCaseSensitive(t *testing.T) {
	t.Parallel()
	env := startEnv(t, dbtest.SQLite(t))
	cs := env.Connect(t, writer(t, env))
	args := ticketArgs(newOperationID(t))
	for _, c := range []struct {
		tool string
		args map[string]any
		name string
	}{
		{mcptools.ToolCreateTicket, with(without(args, "title"), "Title", "Printer on fire"), "Title"},
		{mcptools.ToolCreateTicket, with(args, "TITLE", "Another"), "TITLE"},
		{mcptools.ToolListTickets, map[string]any{"Limit": 1}, "Limit"},
	} {
		e := toolError(t, servertest.Call(t, cs, c.tool, c.args), "invalid_input")
		if !strings.Contains(e.Error.Message, `additional properties ["`+c.name+`"]`) {
			t.Errorf("%s with %s: message %q does not refuse %s as an unknown property", c.tool, c.name, e.Error.Message, c.name)
		}
	}
	if n, m := env.CountTickets(t, tenant), env.CountOperations(t, tenant); n != 0 || m != 0 {
		t.Errorf("misnamed arguments wrote %d tickets and %d operation records", n, m)
	}
}

// TestInputSchemasAreClosed: every object a tool's input schema describes
// property by property refuses properties it does not name. The argument
// decoding relies on it (internal/mcptools/arguments.go): only exactly
// named properties reach encoding/json, whose case-insensitive matching
// then never applies.
func TestInputSchemasAreClosed(t *testing.T) {
	t.Parallel()
	var walk func(tool, at string, s *jsonschema.Schema)
	walk = func(tool, at string, s *jsonschema.Schema) {
		if s == nil {
			return
		}
		if at == "" || (s.Type == "object" && s.Properties != nil) {
			if b, _ := json.Marshal(s.AdditionalProperties); string(b) != "false" {
				t.Errorf("%s: %s allows additional properties (%s)", tool, "root"+at, b)
			}
		}
		for name, p := range s.Properties {
			walk(tool, at+"."+name, p)
		}
		for _, sub := range s.AnyOf {
			walk(tool, at, sub)
		}
		walk(tool, at+"[]", s.Items)
	}
	for _, tool := range mcptools.Tools() {
		s, ok := tool.Def().InputSchema.(*jsonschema.Schema)
		if !ok {
			t.Fatalf("%s: input schema is %T", tool.Name, tool.Def().InputSchema)
		}
		walk(tool.Name, "", s)
	}
}
