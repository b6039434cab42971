package mcptools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// surfaceEnv serves two tenants: acme, with project support (SUP) and
// tickets SUP-1 and SUP-2 (the second with a comment), and globex, with
// project ops (OPS) and ticket OPS-1. It returns a session per tenant at
// protocol version.
func surfaceEnv(t *testing.T, version string) (acme, globex *mcp.ClientSession, env *servertest.Env) {
	t.Helper()
	env = servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	if _, err := env.Service.CreateProject(context.Background(), "globex", tickets.Project{ID: "ops", Key: "OPS", Name: "Operations"}); err != nil {
		t.Fatal(err)
	}
	dial := func(tenant string) *mcp.ClientSession {
		cs, err := servertest.DialWith(env.Endpoint, servertest.Bearer(env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite), http.DefaultTransport), version)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	acme, globex = dial("acme"), dial("globex")
	created(t, servertest.Call(t, acme, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "priority", "low")))
	second := created(t, servertest.Call(t, acme, mcptools.ToolCreateTicket, with(with(ticketArgs(newOperationID(t)), "priority", "high"), "title", "Badge reader down")))
	if res := servertest.Call(t, acme, mcptools.ToolAddComment, map[string]any{
		"operation_id": newOperationID(t), "id": second.Ticket.Key, "body": "Rebooted it; still down.",
	}); res.IsError {
		t.Fatalf("add_comment: %s", text(res))
	}
	created(t, servertest.Call(t, globex, mcptools.ToolCreateTicket, with(with(ticketArgs(newOperationID(t)), "project_id", "ops"), "priority", "normal")))
	return acme, globex, env
}

// rpcCode is the JSON-RPC error code of err, or 0.
func rpcCode(err error) int64 {
	var w *jsonrpc.Error
	if errors.As(err, &w) {
		return w.Code
	}
	return 0
}

func readResource(cs *mcp.ClientSession, uri string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), servertest.CallTimeout)
	defer cancel()
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "text/markdown" || res.Contents[0].URI != uri {
		return "", errors.New("want one text/markdown content for the URI read")
	}
	return res.Contents[0].Text, nil
}

// TestResourcesAreTheCallersTenantsOnly reads ticket:// and project://
// at both protocol versions: the caller's answer Markdown with the fields,
// description and comments; another tenant's key is -32002, exactly as
// one that exists nowhere.
func TestResourcesAreTheCallersTenantsOnly(t *testing.T) {
	t.Parallel()
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			acme, globex, _ := surfaceEnv(t, version)
			ctx := context.Background()
			templates, err := acme.ListResourceTemplates(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var uris []string
			for _, tpl := range templates.ResourceTemplates {
				uris = append(uris, tpl.URITemplate)
			}
			if slices.Sort(uris); !slices.Equal(uris, []string{mcptools.ProjectTemplate, mcptools.TicketTemplate}) {
				t.Errorf("resources/templates/list = %v", uris)
			}

			md, err := readResource(acme, "ticket://sup-2")
			if err != nil {
				t.Fatalf("ticket://sup-2: %v", err)
			}
			for _, want := range []string{"# SUP-2: Badge reader down", "- priority: high", "- assignee: unassigned", "## Description", "Third floor", "**agent** at", "Rebooted it; still down."} {
				if !strings.Contains(md, want) {
					t.Errorf("ticket://sup-2 lacks %q:\n%s", want, md)
				}
			}
			md, err = readResource(acme, "project://support")
			if err != nil || !strings.Contains(md, "- SUP-2 [high] unassigned: Badge reader down\n- SUP-1 [low]") {
				t.Errorf("project://support (most urgent first): %v\n%s", err, md)
			}

			_, foreign := readResource(globex, "ticket://SUP-2")
			_, unknown := readResource(globex, "ticket://SUP-99")
			_, foreignProject := readResource(globex, "project://support")
			_, unmatched := readResource(acme, "other://SUP-2")
			for name, err := range map[string]error{"another tenant's ticket": foreign, "an unknown ticket": unknown, "another tenant's project": foreignProject, "a URI of no template": unmatched} {
				if rpcCode(err) != mcptools.CodeResourceNotFound {
					t.Errorf("%s: %v, want JSON-RPC %d", name, err, mcptools.CodeResourceNotFound)
				}
			}
			if foreign != nil && unknown != nil && strings.ReplaceAll(foreign.Error(), "SUP-2", "X") != strings.ReplaceAll(unknown.Error(), "SUP-99", "X") {
				t.Errorf("another tenant's ticket answers %q, an unknown one %q: want the same", foreign, unknown)
			}
		})
	}
}

func getPrompt(cs *mcp.ClientSession, name string, args map[string]string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), servertest.CallTimeout)
	defer cancel()
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		return "", errors.New("want one user message")
	}
	tc, ok := res.Messages[0].Content.(*mcp.TextContent)
	if !ok {
		return "", errors.New("want text content")
	}
	return tc.Text, nil
}

// TestPromptsAreFilledFromTheCallersTenant gets both prompts for the
// caller's project and ticket, and for another tenant's: -32602.
func TestPromptsAreFilledFromTheCallersTenant(t *testing.T) {
	t.Parallel()
	for _, version := range versions {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			acme, globex, _ := surfaceEnv(t, version)
			list, err := acme.ListPrompts(context.Background(), nil)
			if err != nil || len(list.Prompts) != 2 {
				t.Fatalf("prompts/list: %v %+v", err, list)
			}
			triage, err := getPrompt(acme, mcptools.PromptTriage, map[string]string{"project_id": "support"})
			if err != nil || !strings.Contains(triage, "update_ticket") || !strings.Contains(triage, "- SUP-2 [high] unassigned: Badge reader down") {
				t.Errorf("triage: %v\n%s", err, triage)
			}
			summary, err := getPrompt(acme, mcptools.PromptSummarizeTicket, map[string]string{"id": "SUP-2"})
			if err != nil || !strings.Contains(summary, "Summarize") || !strings.Contains(summary, "Rebooted it; still down.") {
				t.Errorf("summarize_ticket: %v\n%s", err, summary)
			}
			for name, args := range map[string]map[string]string{
				mcptools.PromptTriage:          {"project_id": "support"},
				mcptools.PromptSummarizeTicket: {"id": "SUP-2"},
			} {
				if _, err := getPrompt(globex, name, args); rpcCode(err) != jsonrpc.CodeInvalidParams {
					t.Errorf("%s naming another tenant's %v: %v, want -32602", name, args, err)
				}
			}
		})
	}
}

// TestCompletionOffersOnlyTheCallersKeys completes ticket keys and
// project IDs for prompt arguments and template variables.
func TestCompletionOffersOnlyTheCallersKeys(t *testing.T) {
	t.Parallel()
	acme, globex, _ := surfaceEnv(t, "2026-07-28")
	complete := func(cs *mcp.ClientSession, ref mcp.CompleteReference, arg, value string) []string {
		t.Helper()
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{Ref: &ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
		if err != nil {
			t.Fatalf("complete %+v %s=%q: %v", ref, arg, value, err)
		}
		return res.Completion.Values
	}
	ticketRef := mcp.CompleteReference{Type: "ref/resource", URI: mcptools.TicketTemplate}
	summarize := mcp.CompleteReference{Type: "ref/prompt", Name: mcptools.PromptSummarizeTicket}
	triage := mcp.CompleteReference{Type: "ref/prompt", Name: mcptools.PromptTriage}
	for _, c := range []struct {
		cs        *mcp.ClientSession
		ref       mcp.CompleteReference
		arg, pre  string
		want      []string
		who, what string
	}{
		{acme, ticketRef, "key", "", []string{"SUP-2", "SUP-1"}, "acme", "every key, latest first"},
		{acme, ticketRef, "key", "sup-2", []string{"SUP-2"}, "acme", "a prefix in lower case"},
		{acme, summarize, "id", "OPS", []string{}, "acme", "globex's prefix"},
		{globex, summarize, "id", "", []string{"OPS-1"}, "globex", "every key"},
		{globex, ticketRef, "key", "SUP", []string{}, "globex", "acme's prefix"},
		{acme, triage, "project_id", "s", []string{"support"}, "acme", "projects"},
		{globex, triage, "project_id", "", []string{"ops"}, "globex", "projects"},
		{acme, triage, "nothing", "", []string{}, "acme", "an argument the prompt lacks"},
	} {
		if got := complete(c.cs, c.ref, c.arg, c.pre); !slices.Equal(got, c.want) {
			t.Errorf("%s, %s (%s=%q): %v, want %v", c.who, c.what, c.arg, c.pre, got, c.want)
		}
	}
}

// TestSurfaceSnapshots compares resources/templates/list and prompts/list
// with testdata/surface/, as TestToolSnapshots does the tools, so any
// change to what clients show their users shows up in review. Run with
// -update to accept a change.
func TestSurfaceSnapshots(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	cs := env.Connect(t, env.Token(t, "acme", authn.ScopeRead))
	templates, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	prompts, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]any{"resource_templates": templates.ResourceTemplates, "prompts": prompts.Prompts} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("testdata", "surface", name+".json")
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/mcptools -run TestSurfaceSnapshots -update to create it)", err)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s differs from %s (run with -update if the change is intended):\n%s", name, path, b)
		}
	}
}
