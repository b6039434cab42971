package mcptools_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// tsClientDir holds the TypeScript SDK client (ticketing.mjs) with its
// locked packages.
const tsClientDir = "testdata/tsclient"

// tsInstalledMark, inside node_modules, holds the SHA-256 of the
// package-lock.json the packages were installed from: written after npm ci
// succeeds, so an interrupted install or a changed lockfile installs again.
const tsInstalledMark = ".ticketd-package-lock.sha256"

// installTSClient makes sure testdata/tsclient's locked packages are in its
// node_modules, installing them with npm ci when they are missing or were
// installed from another lockfile. Without Node.js or npm the test is
// skipped; with them but no npm registry (or warm cache) it fails.
func installTSClient(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the TypeScript SDK client test needs Node.js 20 or later with npm: %s is not on PATH", tool)
		}
	}
	lock, err := os.ReadFile(filepath.Join(tsClientDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	want := hex.EncodeToString(sum[:])
	mark := filepath.Join(tsClientDir, "node_modules", tsInstalledMark)
	if got, err := os.ReadFile(mark); err == nil && string(got) == want {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --prefer-offline takes npm's cache as it is: with a warm cache the
	// install asks the registry nothing.
	npm := exec.CommandContext(ctx, "npm", "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error")
	npm.Dir = tsClientDir
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tsClientDir, err, out)
	}
	if err := os.WriteFile(mark, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tsToolAnswer is a tools/call answer as ticketing.mjs prints it.
type tsToolAnswer struct {
	IsError    bool            `json:"is_error"`
	Structured json.RawMessage `json:"structured"`
	Text       string          `json:"text"`
}

// result is the answer as the go-sdk would have given it, so the Go tests'
// checks (toolError, servertest.Decode) judge both clients alike.
func (a tsToolAnswer) result() *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: a.IsError, StructuredContent: a.Structured, Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}
}

// tsRPCAnswer is a request that may be refused at the protocol level.
type tsRPCAnswer struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// code is the JSON-RPC error code, or 0 for an answer.
func (a tsRPCAnswer) code() int64 {
	if a.Error == nil {
		return 0
	}
	return a.Error.Code
}

type tsCompletion struct {
	Values []string `json:"values"`
	tsRPCAnswer
}

// tsObservations is everything ticketing.mjs prints.
type tsObservations struct {
	ProtocolVersions map[string]string `json:"protocol_versions"`
	Tickets          struct {
		First, Second, Child, Foreign string
	} `json:"tickets"`
	Link struct {
		First     tsToolAnswer `json:"first"`
		Again     tsToolAnswer `json:"again"`
		GetTicket tsToolAnswer `json:"get_ticket"`
	} `json:"link"`
	Cycle struct {
		Blocks  tsToolAnswer `json:"blocks"`
		Reverse tsToolAnswer `json:"reverse"`
	} `json:"cycle"`
	SubTask struct {
		Parent tsToolAnswer `json:"parent"`
	} `json:"sub_task"`
	Assignee tsToolAnswer `json:"assignee"`
	Resource struct {
		Own         tsRPCAnswer `json:"own"`
		OtherTenant tsRPCAnswer `json:"other_tenant"`
	} `json:"resource"`
	Prompt struct {
		Own         tsRPCAnswer `json:"own"`
		OtherTenant tsRPCAnswer `json:"other_tenant"`
	} `json:"prompt"`
	Completion struct {
		AOwnPrefix tsCompletion `json:"a_own_prefix"`
		BAPrefix   tsCompletion `json:"b_a_prefix"`
		BEveryKey  tsCompletion `json:"b_every_key"`
		BOwnPrefix tsCompletion `json:"b_own_prefix"`
	} `json:"completion"`
}

// runTSClient runs ticketing.mjs against env as tenant (project support)
// and globex (project ops) and decodes what it printed.
func runTSClient(t *testing.T, env *servertest.Env) tsObservations {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := exec.CommandContext(ctx, "node", "ticketing.mjs", env.Endpoint,
		writer(t, env), "support", env.Token(t, "globex", authn.ScopeRead, authn.ScopeWrite), "ops")
	node.Dir = tsClientDir
	var stdout, stderr bytes.Buffer
	node.Stdout, node.Stderr = &stdout, &stderr
	if err := node.Run(); err != nil {
		t.Fatalf("node ticketing.mjs: %v\n%s", err, stderr.String())
	}
	var obs tsObservations
	if err := json.Unmarshal(stdout.Bytes(), &obs); err != nil {
		t.Fatalf("ticketing.mjs printed no observations: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	return obs
}

// TestTicketingOverTheTypeScriptClient runs the ticketing model through the
// official TypeScript SDK client over Streamable HTTP, as the go-sdk tests
// beside it do: a retried link is one link, a blocks cycle is refused
// naming it, a sub-task shows on its parent, an unknown assignee is refused
// with a next step, and resources, prompts and completion answer for the
// caller's tenant alone.
func TestTicketingOverTheTypeScriptClient(t *testing.T) {
	t.Parallel()
	installTSClient(t)
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		if _, err := env.Service.CreateProject(context.Background(), "globex", tickets.Project{ID: "ops", Key: "OPS", Name: "Operations"}); err != nil {
			t.Fatal(err)
		}
		obs := runTSClient(t, env)
		t.Logf("the TypeScript client negotiated %v", obs.ProtocolVersions)
		checkTSLinks(t, obs)
		checkTSTickets(t, obs)
		checkTSSurface(t, obs)
	})
}

func checkTSLinks(t *testing.T, obs tsObservations) {
	first := servertest.Decode[mcptools.LinkTicketsOut](t, obs.Link.First.result())
	if obs.Link.First.IsError || first.Replayed || !first.Changed || len(first.Links) != 1 || first.Links[0].Key != obs.Tickets.Second {
		t.Errorf("link_tickets = %s, want one new link to %s", obs.Link.First.Structured, obs.Tickets.Second)
	}
	again := servertest.Decode[mcptools.LinkTicketsOut](t, obs.Link.Again.result())
	if obs.Link.Again.IsError || !again.Replayed || again.OperationID != first.OperationID || len(again.Links) != 1 {
		t.Errorf("link_tickets retried = %s, want replayed with the one link", obs.Link.Again.Structured)
	}
	got := servertest.Decode[mcptools.GetTicketOut](t, obs.Link.GetTicket.result())
	if len(got.Links) != 1 || got.Links[0].Link != "duplicates" || got.Links[0].Key != obs.Tickets.First {
		t.Errorf("get_ticket %s links = %+v, want one: duplicates %s", obs.Tickets.Second, got.Links, obs.Tickets.First)
	}

	if obs.Cycle.Blocks.IsError {
		t.Fatalf("%s blocks %s: %s", obs.Tickets.First, obs.Tickets.Second, obs.Cycle.Blocks.Text)
	}
	cycle := toolError(t, obs.Cycle.Reverse.result(), "invalid_input")
	if !strings.Contains(cycle.Error.Message, obs.Tickets.First+" blocks "+obs.Tickets.Second) {
		t.Errorf("%s blocks %s refused with %q, which does not name the cycle", obs.Tickets.Second, obs.Tickets.First, cycle.Error.Message)
	}
}

func checkTSTickets(t *testing.T, obs tsObservations) {
	parent := servertest.Decode[mcptools.GetTicketOut](t, obs.SubTask.Parent.result())
	if parent.Children.Count != 1 || !slices.Equal(parent.Children.Keys, []string{obs.Tickets.Child}) {
		t.Errorf("get_ticket %s children = %+v, want the sub-task %s", obs.Tickets.First, parent.Children, obs.Tickets.Child)
	}

	refused := toolError(t, obs.Assignee.result(), "invalid_input")
	if !strings.Contains(refused.Error.Message, "nobody-by-this-name") || !strings.Contains(obs.Assignee.Text, "list_users") {
		t.Errorf("unknown assignee refused with %q, which names neither the assignee nor list_users", obs.Assignee.Text)
	}
}

func checkTSSurface(t *testing.T, obs tsObservations) {
	var read mcp.ReadResourceResult
	if err := json.Unmarshal(obs.Resource.Own.Result, &read); err != nil || len(read.Contents) != 1 ||
		read.Contents[0].MIMEType != "text/markdown" || !strings.Contains(read.Contents[0].Text, "# "+obs.Tickets.First+": Printer on fire") {
		t.Errorf("ticket://%s for its tenant = %s %+v (%v), want its Markdown", obs.Tickets.First, obs.Resource.Own.Result, obs.Resource.Own.Error, err)
	}
	if code := obs.Resource.OtherTenant.code(); code != mcptools.CodeResourceNotFound {
		t.Errorf("ticket://%s for another tenant = %s %+v, want JSON-RPC %d", obs.Tickets.First, obs.Resource.OtherTenant.Result, obs.Resource.OtherTenant.Error, mcptools.CodeResourceNotFound)
	}

	var prompt struct {
		Messages []struct {
			Content mcp.TextContent `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(obs.Prompt.Own.Result, &prompt); err != nil || len(prompt.Messages) != 1 ||
		!strings.Contains(prompt.Messages[0].Content.Text, "Summarize") || !strings.Contains(prompt.Messages[0].Content.Text, obs.Tickets.First) {
		t.Errorf("summarize_ticket %s for its tenant = %s %+v (%v)", obs.Tickets.First, obs.Prompt.Own.Result, obs.Prompt.Own.Error, err)
	}
	if code := obs.Prompt.OtherTenant.code(); code != jsonrpc.CodeInvalidParams {
		t.Errorf("summarize_ticket %s for another tenant = %s %+v, want JSON-RPC %d", obs.Tickets.First, obs.Prompt.OtherTenant.Result, obs.Prompt.OtherTenant.Error, jsonrpc.CodeInvalidParams)
	}

	own := []string{obs.Tickets.Child, obs.Tickets.Second, obs.Tickets.First}
	for _, c := range []struct {
		what string
		got  tsCompletion
		want []string
	}{
		{"tenant A, its prefix", obs.Completion.AOwnPrefix, own},
		{"tenant B, A's prefix", obs.Completion.BAPrefix, []string{}},
		{"tenant B, every key", obs.Completion.BEveryKey, []string{obs.Tickets.Foreign}},
		{"tenant B, its prefix", obs.Completion.BOwnPrefix, []string{obs.Tickets.Foreign}},
	} {
		if c.got.Error != nil || !slices.Equal(c.got.Values, c.want) {
			t.Errorf("completion/complete ticket://{key}, %s = %v %+v, want %v", c.what, c.got.Values, c.got.Error, c.want)
		}
	}
}
