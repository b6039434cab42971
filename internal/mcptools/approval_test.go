package mcptools_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// approvalEnv serves a database with approval on (the defaults of
// TICKETD_APPROVAL=on) and the project "support" for tenant acme.
func approvalEnv(t *testing.T, d *db.DB, opts approval.Options) *servertest.Env {
	t.Helper()
	opts.Policy = approval.Policy{Enabled: true, BulkThreshold: approval.DefaultBulkThreshold}
	env := servertest.Start(t, d, servertest.Options{Approval: &opts, Edge: allTools})
	env.SeedProject(t, "acme")
	return env
}

// person is an elicitation handler standing in for the person at the
// client: it counts the times it is asked and answers as told.
type person struct {
	asked  atomic.Int32
	answer atomic.Value // *mcp.ElicitResult
	last   atomic.Value // *mcp.ElicitParams
}

func newPerson(approve bool) *person {
	p := &person{}
	p.say(approve)
	return p
}

func (p *person) say(approve bool) {
	if approve {
		p.answer.Store(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}})
	} else {
		p.answer.Store(&mcp.ElicitResult{Action: "decline"})
	}
}

func (p *person) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	p.asked.Add(1)
	p.last.Store(req.Params)
	return p.answer.Load().(*mcp.ElicitResult), nil
}

// formClient connects at 2026-07-28 declaring form elicitation, answered
// by p, as token's subject.
func formClient(t *testing.T, env *servertest.Env, token string, p *person) *mcp.ClientSession {
	t.Helper()
	return env.ConnectWith(t, token, &mcp.ClientOptions{
		ElicitationHandler: p.handle,
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	}, nil)
}

// manualClient declares form elicitation but drives the rounds itself, so
// a test can send any requestState it likes.
func manualClient(t *testing.T, env *servertest.Env, token string) *mcp.ClientSession {
	t.Helper()
	return env.ConnectWith(t, token, &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities:   &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}},
	}, nil)
}

func writeToken(t *testing.T, env *servertest.Env, subject string) string {
	t.Helper()
	return env.Mint(t, authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: "acme", Subject: subject,
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite}, TTL: time.Hour}, time.Now())
}

// approveAs has person subject approve approval id over REST.
func approveAs(t *testing.T, env *servertest.Env, subject, id string) {
	t.Helper()
	if status, body := env.Decide(t, "acme", subject, id, true); status != http.StatusOK {
		t.Fatalf("%s approving %s = %d %s; want 200", subject, id, status, body)
	}
}

// decideWith posts an approve of approval id over REST with token and
// returns the status.
func decideWith(t *testing.T, env *servertest.Env, token, id string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/approvals/"+id+"/approve", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func approvalsWith(t *testing.T, env *servertest.Env, status approval.Status) int64 {
	t.Helper()
	var n int64
	if err := env.DB.Gorm.Table("approvals").Where("tenant_id = ? AND status = ?", "acme", string(status)).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

func TestFormApprovalWritesOnceAndReplaysWithoutAsking(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := approvalEnv(t, d, approval.Options{})
		alice := newPerson(true)
		cs := formClient(t, env, writeToken(t, env, "alice"), alice)
		op := newOperationID(t)
		first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
		if alice.asked.Load() != 1 || env.CountTickets(t, "acme") != 1 || env.CountOperations(t, "acme") != 1 {
			t.Fatalf("asked %d times, %d tickets, %d operations; want 1, 1, 1",
				alice.asked.Load(), env.CountTickets(t, "acme"), env.CountOperations(t, "acme"))
		}
		ask := alice.last.Load().(*mcp.ElicitParams)
		if ask.Mode != "form" || !strings.Contains(ask.Message, op) || !strings.Contains(ask.Message, "urgent") {
			t.Errorf("the person was asked %q (%s); want a form naming the operation and the urgency", ask.Message, ask.Mode)
		}
		if n := approvalsWith(t, env, approval.StatusUsed); n != 1 {
			t.Errorf("%d used approvals, want 1", n)
		}
		replay := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
		if !replay.Replayed || replay.TicketID != first.TicketID || alice.asked.Load() != 1 || env.CountTickets(t, "acme") != 1 {
			t.Errorf("replay = %+v after %d asks; want the same ticket replayed without asking again", replay, alice.asked.Load())
		}
		st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus,
			map[string]any{"operation_id": op}))
		if st.Approval == nil || st.Approval.DecidedBy != "alice" || st.Approval.DecidedVia != "form" || st.Approval.DecidedAt.IsZero() {
			t.Errorf("get_operation_status approval = %+v; want decided by alice via form, with a time", st.Approval)
		}
		history, err := env.Service.ListEvents(context.Background(), "acme", first.TicketID, tickets.ListParams{})
		if err != nil || len(history.Events) != 1 || history.Events[0].Approval == nil || history.Events[0].Approval.DecidedBy != "alice" {
			t.Errorf("history = %+v, %v; want its created event to name alice's approval", history.Events, err)
		}
		// A write the policy does not name is never asked about.
		created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "priority", "high")))
		if alice.asked.Load() != 1 {
			t.Errorf("a high-priority ticket asked for approval")
		}
	})
}

// TestApprovalOfASubTaskNamesItsParent: the person approving an urgent
// sub-task reads what it goes under.
func TestApprovalOfASubTaskNamesItsParent(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	alice := newPerson(true)
	cs := formClient(t, env, writeToken(t, env, "alice"), alice)
	parent := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "priority", "high")))
	created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "parent", parent.TicketID)))
	ask := alice.last.Load().(*mcp.ElicitParams)
	if alice.asked.Load() != 1 || !strings.Contains(ask.Message, "sub-task of "+parent.Ticket.Key) {
		t.Errorf("after %d asks the person read %q; want one ask naming the parent %s", alice.asked.Load(), ask.Message, parent.Ticket.Key)
	}
}

func TestFormDeclineWritesNothingAndKeepsTheOperationID(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	bob := newPerson(false)
	cs := formClient(t, env, writeToken(t, env, "bob"), bob)
	op := newOperationID(t)
	toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)), "approval_declined")
	if env.CountTickets(t, "acme") != 0 || env.CountOperations(t, "acme") != 0 || bob.asked.Load() != 1 {
		t.Fatalf("after a decline: %d tickets, %d operations, %d asks; want 0, 0, 1",
			env.CountTickets(t, "acme"), env.CountOperations(t, "acme"), bob.asked.Load())
	}
	bob.say(true)
	created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
	if env.CountTickets(t, "acme") != 1 || bob.asked.Load() != 2 {
		t.Errorf("the same operation_id after a decline: %d tickets after %d asks; want 1 after 2", env.CountTickets(t, "acme"), bob.asked.Load())
	}
	resp, err := http.Get(env.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	scrape, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`ticketd_approvals_total{event="asked"} 2`, `ticketd_approvals_total{event="declined"} 1`,
		`ticketd_approvals_total{event="approved"} 1`, `ticketd_approvals_total{event="expired"} 0`} {
		if !strings.Contains(string(scrape), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// askFor makes the first call of a write with a manual client and returns
// the requestState it was answered with.
func askFor(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptools.ToolCreateTicket, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	ask, ok := res.InputRequests["approval"].(*mcp.ElicitParams)
	if !res.NeedsInput() || !ok || ask.Mode != "form" || res.RequestState == "" {
		t.Fatalf("first call = %+v; want input_required with a form and a requestState", res)
	}
	return res.RequestState
}

func retryWith(cs *mcp.ClientSession, args map[string]any, state string) (*mcp.CallToolResult, error) {
	return cs.CallTool(context.Background(), &mcp.CallToolParams{
		Name: mcptools.ToolCreateTicket, Arguments: args, RequestState: state,
		InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}},
	})
}

func TestRequestStateCannotBeForgedOrCarried(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	alice := manualClient(t, env, writeToken(t, env, "alice"))
	mallory := manualClient(t, env, writeToken(t, env, "mallory"))
	op := newOperationID(t)
	args := ticketArgs(op)
	state := askFor(t, alice, args)

	invalidParams := func(name string, res *mcp.CallToolResult, err error) {
		t.Helper()
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s: %+v, %v; want JSON-RPC %d", name, res, err, jsonrpc.CodeInvalidParams)
		}
	}
	res, err := retryWith(alice, args, state[:len(state)-2]+"xx")
	invalidParams("tampered", res, err)
	res, err = retryWith(alice, args, "forged."+state)
	invalidParams("forged", res, err)
	res, err = retryWith(mallory, args, state)
	invalidParams("another subject", res, err)
	res, err = retryWith(alice, ticketArgs(newOperationID(t)), state)
	invalidParams("another operation", res, err)
	res, err = retryWith(alice, with(args, "title", "Printer fine, actually"), state)
	invalidParams("other arguments", res, err)

	// An accept without any state is no approval: it is asked again.
	res, err = alice.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptools.ToolCreateTicket, Arguments: args,
		InputResponses: mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}})
	if err != nil || !res.NeedsInput() {
		t.Errorf("an accept without state = %+v, %v; want asked again", res, err)
	}
	// Past its expiry the state asks again, with a fresh state.
	clock.Store(now.Add(approval.DefaultTTL + time.Second).UnixNano())
	res, err = retryWith(alice, args, state)
	if err != nil || !res.NeedsInput() || res.RequestState == state {
		t.Errorf("an expired state = %+v, %v; want asked again with a new state", res, err)
	}
	if env.CountTickets(t, "acme") != 0 || env.CountOperations(t, "acme") != 0 {
		t.Fatalf("%d tickets, %d operations; nothing may run without a valid approval", env.CountTickets(t, "acme"), env.CountOperations(t, "acme"))
	}
	// The fresh state does approve; used once, it cannot approve again.
	fresh := res.RequestState
	res, err = retryWith(alice, args, fresh)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("the fresh state = %+v, %v; want the write", res, err)
	}
	other := with(args, "operation_id", newOperationID(t))
	res, err = retryWith(alice, other, fresh)
	invalidParams("a used state on another operation", res, err)
	if env.CountTickets(t, "acme") != 1 {
		t.Errorf("%d tickets, want 1", env.CountTickets(t, "acme"))
	}
}

func TestRacingRetriesWithOneApprovalWriteOnce(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.Postgres(t), approval.Options{})
	alice := manualClient(t, env, writeToken(t, env, "alice"))
	args := ticketArgs(newOperationID(t))
	state := askFor(t, alice, args)
	const racers = 8
	results := make([]*mcp.CallToolResult, racers)
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() {
			for deadline := time.Now().Add(time.Minute); ; {
				results[i], errs[i] = retryWith(alice, args, state)
				if errs[i] != nil || !results[i].IsError || time.Now().After(deadline) || !strings.Contains(text(results[i]), "operation_in_progress") {
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	fresh := 0
	for i := range racers {
		if errs[i] != nil || results[i].IsError || results[i].NeedsInput() {
			t.Errorf("racer %d: %+v, %v", i, results[i], errs[i])
			continue
		}
		if !servertest.Decode[mcptools.CreateTicketOut](t, results[i]).Replayed {
			fresh++
		}
	}
	if fresh != 1 || env.CountTickets(t, "acme") != 1 || env.CountOperations(t, "acme") != 1 {
		t.Errorf("%d fresh answers, %d tickets, %d operations; want one write and the rest replays",
			fresh, env.CountTickets(t, "acme"), env.CountOperations(t, "acme"))
	}
}

func TestStatelessLegacyClientGetsApprovalRequired(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	// A 2025-11-25 client declaring elicitation: on stateless HTTP the
	// server cannot reach it, so it must be told, not asked.
	p := newPerson(true)
	legacy := env.ConnectWith(t, writeToken(t, env, "alice"), &mcp.ClientOptions{ElicitationHandler: p.handle},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	op := newOperationID(t)
	res := servertest.Call(t, legacy, mcptools.ToolCreateTicket, ticketArgs(op))
	out := toolError(t, res, "approval_required")
	// A model that reads only the text must be able to pass the URL on.
	if !strings.Contains(text(res), out.ApprovalURL) || out.ApprovalURL == "" {
		t.Errorf("approval_required text = %q; want it to carry the approval URL %q", text(res), out.ApprovalURL)
	}
	if !out.Error.Retryable || out.ApprovalURL != env.URL+"/console/approvals/"+out.ApprovalID || out.ExpiresAt == nil ||
		out.OperationID != op || p.asked.Load() != 0 {
		t.Errorf("approval_required = %+v (asked %d); want retryable, the console URL, an expiry, the operation", out, p.asked.Load())
	}
	// Retrying unapproved points at the same approval and writes nothing.
	again := toolError(t, servertest.Call(t, legacy, mcptools.ToolCreateTicket, ticketArgs(op)), "approval_required")
	if again.ApprovalID != out.ApprovalID || env.CountTickets(t, "acme") != 0 || env.CountOperations(t, "acme") != 0 {
		t.Errorf("unapproved retry: approval %s (first %s), %d tickets; want the same approval, nothing written", again.ApprovalID, out.ApprovalID, env.CountTickets(t, "acme"))
	}
	// The agent's own token cannot approve; a person with tickets:approve
	// does (here over REST; the console's tests press the button); the
	// agent's retry writes once.
	if status := decideWith(t, env, writeToken(t, env, "alice"), out.ApprovalID); status != http.StatusForbidden {
		t.Fatalf("the agent's token approving = %d, want 403", status)
	}
	approveAs(t, env, "carol", out.ApprovalID)
	created(t, servertest.Call(t, legacy, mcptools.ToolCreateTicket, ticketArgs(op)))
	replay := created(t, servertest.Call(t, legacy, mcptools.ToolCreateTicket, ticketArgs(op)))
	if !replay.Replayed || env.CountTickets(t, "acme") != 1 {
		t.Errorf("after approval: replayed %v, %d tickets; want one write, then a replay", replay.Replayed, env.CountTickets(t, "acme"))
	}
}

func TestBulkAtThresholdNeedsApproval(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	p := newPerson(true)
	cs := formClient(t, env, writeToken(t, env, "alice"), p)
	var ids []string
	for range approval.DefaultBulkThreshold {
		ids = append(ids, created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket,
			with(ticketArgs(newOperationID(t)), "priority", "normal"))).Ticket.Key)
	}
	small := servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, map[string]any{
		"operation_id": newOperationID(t), "ids": ids[:approval.DefaultBulkThreshold-1], "add_labels": []string{"seen"}})
	if small.IsError || p.asked.Load() != 0 {
		t.Fatalf("a bulk below the threshold: %s (asked %d); want it written without asking", text(small), p.asked.Load())
	}
	op := newOperationID(t)
	args := map[string]any{"operation_id": op, "ids": ids, "status": "closed"}
	res := servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, args)
	out := servertest.Decode[mcptools.BulkUpdateTicketsOut](t, res)
	if res.IsError || p.asked.Load() != 1 || len(out.Tickets) != len(ids) || out.Tickets[0].Changes["status"].To != "closed" {
		t.Fatalf("a bulk at the threshold: %s (asked %d); want it asked once, then written", text(res), p.asked.Load())
	}
	ask := p.last.Load().(*mcp.ElicitParams)
	if !strings.Contains(ask.Message, ids[0]) || !strings.Contains(ask.Message, op) {
		t.Errorf("asked %q; want the tickets and the operation named", ask.Message)
	}
	replay := servertest.Decode[mcptools.BulkUpdateTicketsOut](t, servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, args))
	if !replay.Replayed || p.asked.Load() != 1 || replay.Tickets[3].Version != out.Tickets[3].Version {
		t.Errorf("bulk replay = %+v (asked %d); want the recorded versions, not asked again", replay, p.asked.Load())
	}
}

func TestURLElicitationDecidesFromTheStoredDecision(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	var asked atomic.Int32
	var approveOnPage atomic.Bool
	handler := func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		p := req.Params
		if p.Mode != "url" || !strings.HasPrefix(p.URL, env.URL+"/console/approvals/") || p.ElicitationID == "" {
			t.Errorf("asked %+v; want a URL elicitation to the console page", p)
		}
		if approveOnPage.Load() {
			// The person opens the page and approves there.
			if status, body := env.Decide(t, "acme", "carol", p.ElicitationID, true); status != http.StatusOK {
				t.Errorf("carol approving = %d %s", status, body)
			}
		}
		// Accept only says the person agreed to open the page.
		return &mcp.ElicitResult{Action: "accept"}, nil
	}
	cs := env.ConnectWith(t, writeToken(t, env, "alice"), &mcp.ClientOptions{
		ElicitationHandler: handler,
		Capabilities:       &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
	}, nil)
	op := newOperationID(t)
	// Opened but not decided: nothing is written and the agent is told.
	toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)), "approval_required")
	if env.CountTickets(t, "acme") != 0 || asked.Load() != 1 {
		t.Fatalf("an accept without a decision on the page: %d tickets after %d asks; want none after 1", env.CountTickets(t, "acme"), asked.Load())
	}
	approveOnPage.Store(true)
	created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
	if env.CountTickets(t, "acme") != 1 || asked.Load() != 2 {
		t.Errorf("approved on the page: %d tickets after %d asks; want 1 after 2", env.CountTickets(t, "acme"), asked.Load())
	}
}

// stdioWith runs ServeStdio as alice over pipes, for a client with opts at
// protocol version (empty: the latest).
func stdioWith(t *testing.T, svc *tickets.Service, opts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	serverIn, clientOut := io.Pipe()
	clientIn, serverOut := io.Pipe()
	done := make(chan error, 1)
	p := authn.Principal{Tenant: "acme", Subject: "alice", Scopes: []string{authn.ScopeRead, authn.ScopeWrite}, Expires: time.Now().Add(time.Hour)}
	go func() {
		done <- mcptools.ServeStdio(context.Background(), svc, p, nil, serverIn, serverOut, mcptools.StdioOptions{})
		_ = serverOut.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "stdio-approval-test", Version: "v0"}, opts)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: clientIn, Writer: clientOut},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect over stdio pipes: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		<-done
	})
	return cs
}

// TestStdioAsksThroughTheSession: over stdio the session is stateful, so a
// client of either protocol version that declared elicitation is asked in
// its own client (the SDK elicits over the session for 2025-11-25, and the
// client fulfils input_required for 2026-07-28); one that did not is told
// approval_required.
func TestStdioAsksThroughTheSession(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{})
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			p := newPerson(true)
			cs := stdioWith(t, env.Service, &mcp.ClientOptions{ElicitationHandler: p.handle}, version)
			op := newOperationID(t)
			first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
			replay := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
			if first.Replayed || !replay.Replayed || p.asked.Load() != 1 {
				t.Errorf("over stdio at %s: replayed %v then %v after %d asks; want a write asked once, then a replay",
					version, first.Replayed, replay.Replayed, p.asked.Load())
			}
		})
	}
	t.Run("NoElicitation", func(t *testing.T) {
		cs := stdioWith(t, env.Service, nil, "")
		before := env.CountTickets(t, "acme")
		out := toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t))), "approval_required")
		if out.ApprovalURL == "" || env.CountTickets(t, "acme") != before {
			t.Errorf("over stdio without elicitation: %+v; want approval_required with a URL, nothing written", out)
		}
	})
}

// pendingApproval returns the ID of the tenant's newest pending approval,
// the one a form ask left for a person to decide elsewhere.
func pendingApproval(t *testing.T, env *servertest.Env) string {
	t.Helper()
	var id string
	if err := env.DB.Gorm.Table("approvals").Where("tenant_id = ? AND status = ?", "acme", string(approval.StatusPending)).
		Order("created_at DESC").Limit(1).Pluck("approval_id", &id).Error; err != nil || id == "" {
		t.Fatalf("no pending approval (%v)", err)
	}
	return id
}

// TestApprovedThenExpiredIsAskedAgainThroughItsState is issue 28's
// reproduction: a person approves a write, TICKETD_APPROVAL_TTL passes, and
// the agent then retries with the signed requestState it was asked with.
// The state still verifies, but the approval is spent by time: the retry is
// asked again, with a fresh state, and nothing is written until a new yes.
func TestApprovedThenExpiredIsAskedAgainThroughItsState(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		start := time.Now()
		var clock atomic.Int64
		clock.Store(start.UnixNano())
		env := approvalEnv(t, d, approval.Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
		agent := manualClient(t, env, writeToken(t, env, "agent"))
		args := ticketArgs(newOperationID(t))
		state := askFor(t, agent, args)
		approveAs(t, env, "carol", pendingApproval(t, env))

		clock.Store(start.Add(approval.DefaultTTL + 2*time.Second).UnixNano())
		res, err := retryWith(agent, args, state)
		if err != nil || !res.NeedsInput() || res.RequestState == state {
			t.Fatalf("the state of an approval past its TTL = %+v, %v; want asked again with a new state", res, err)
		}
		if env.CountTickets(t, "acme") != 0 || approvalsWith(t, env, approval.StatusExpired) != 1 {
			t.Fatalf("%d tickets, %d expired approvals; want none written and the old approval expired",
				env.CountTickets(t, "acme"), approvalsWith(t, env, approval.StatusExpired))
		}
		// The same state again is no way around it either.
		if res, err := retryWith(agent, args, state); err != nil || !res.NeedsInput() || env.CountTickets(t, "acme") != 0 {
			t.Fatalf("the expired state again = %+v, %v (%d tickets); want asked again, nothing written", res, err, env.CountTickets(t, "acme"))
		}
	})
}

// TestURLChannelSendsFormClientsToTheURL: with TICKETD_APPROVAL_CHANNELS=url
// a client that declares form and URL elicitation is asked by URL, and one
// that declares form alone is told approval_required: no form is offered
// for its host to answer.
func TestURLChannelSendsFormClientsToTheURL(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{Channels: []approval.Mode{approval.ModeURL}})
	both := env.ConnectWith(t, writeToken(t, env, "agent"), &mcp.ClientOptions{
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}}},
	}, nil)
	res, err := both.CallTool(context.Background(), &mcp.CallToolParams{Name: mcptools.ToolCreateTicket, Arguments: ticketArgs(newOperationID(t))})
	if err != nil {
		t.Fatal(err)
	}
	if ask, ok := res.InputRequests["approval"].(*mcp.ElicitParams); !ok || ask.Mode != "url" {
		t.Errorf("a form- and URL-capable client with channels=url was asked %+v; want a URL elicitation", res.InputRequests)
	}
	p := newPerson(true)
	formOnly := formClient(t, env, writeToken(t, env, "agent"), p)
	toolError(t, servertest.Call(t, formOnly, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t))), "approval_required")
	if p.asked.Load() != 0 || env.CountTickets(t, "acme") != 0 {
		t.Errorf("with channels=url a form-only client was asked %d times, %d tickets; want told approval_required, nothing written",
			p.asked.Load(), env.CountTickets(t, "acme"))
	}
	// A form answer sent without being asked is no approval either.
	manual := manualClient(t, env, writeToken(t, env, "agent"))
	res, err = retryWith(manual, ticketArgs(newOperationID(t)), "")
	if err != nil || res.NeedsInput() || !res.IsError || env.CountTickets(t, "acme") != 0 {
		t.Errorf("an unasked form answer with channels=url = %+v, %v; want approval_required, nothing written", res, err)
	}
}

// TestFourEyesNeedsASecondPerson: with four-eyes on, a form-capable client
// is never offered the form its own host would answer; the requester, even
// holding tickets:approve, cannot approve its own write; a second person
// can, and the retry writes once.
func TestFourEyesNeedsASecondPerson(t *testing.T) {
	t.Parallel()
	env := approvalEnv(t, dbtest.SQLite(t), approval.Options{FourEyes: true})
	aliceToken := env.Mint(t, authn.TokenRequest{Issuer: servertest.Issuer, Audience: env.Endpoint, Tenant: "acme", Subject: "alice",
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeApprove}, TTL: time.Hour}, time.Now())
	p := newPerson(true)
	cs := formClient(t, env, aliceToken, p)
	op := newOperationID(t)
	out := toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)), "approval_required")
	if p.asked.Load() != 0 {
		t.Fatalf("with four-eyes the requester's own client was asked %d times; want it sent to the URL", p.asked.Load())
	}
	if status := decideWith(t, env, aliceToken, out.ApprovalID); status != http.StatusForbidden {
		t.Fatalf("the requester approving its own write under four-eyes = %d, want 403", status)
	}
	toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)), "approval_required")
	approveAs(t, env, "bob", out.ApprovalID)
	first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
	replay := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(op)))
	if first.Replayed || !replay.Replayed || env.CountTickets(t, "acme") != 1 {
		t.Errorf("after bob approved: replayed %v then %v, %d tickets; want one write, then a replay", first.Replayed, replay.Replayed, env.CountTickets(t, "acme"))
	}
	st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": op}))
	if st.Approval == nil || st.Approval.DecidedBy != "bob" || st.Approval.RequestedBy != "alice" || st.Approval.DecidedVia != "rest" {
		t.Errorf("get_operation_status approval = %+v; want asked by alice, decided by bob via rest", st.Approval)
	}
}
