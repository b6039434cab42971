package mcptools_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

const tenant = "acme"

// startEnv serves d with the project "support" seeded for tenant.
func startEnv(t *testing.T, d *db.DB) *servertest.Env {
	t.Helper()
	env := servertest.Start(t, d, servertest.Options{Edge: allTools})
	env.SeedProject(t, tenant)
	return env
}

func writer(t *testing.T, env *servertest.Env) string {
	t.Helper()
	return env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite)
}

func TestCreateTicketTwiceIsOneTicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		args := ticketArgs(newOperationID(t))

		first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
		second := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))

		if first.Replayed || !second.Replayed {
			t.Errorf("replayed = %v then %v, want false then true", first.Replayed, second.Replayed)
		}
		if second.TicketID != first.TicketID || second.Ticket.Key != first.Ticket.Key {
			t.Errorf("second call returned %s (%s), want the first ticket %s (%s)",
				second.TicketID, second.Ticket.Key, first.TicketID, first.Ticket.Key)
		}
		if first.OperationID != args["operation_id"] {
			t.Errorf("operation_id = %q, want %q", first.OperationID, args["operation_id"])
		}
		if got, want := first.Ticket.Labels, []string{"hardware", "printer"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("labels = %q, want normalised %q", got, want)
		}
		if first.Ticket.Reporter != "agent" {
			t.Errorf("reporter = %q, want the token's subject", first.Ticket.Reporter)
		}
		if n := env.CountTickets(t, tenant); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}

func TestCreateTicketSameIDOtherInputConflicts(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		args := ticketArgs(newOperationID(t))
		first := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))

		res := servertest.Call(t, cs, mcptools.ToolCreateTicket, with(args, "title", "Printer on fire again"))

		e := toolError(t, res, "idempotency_conflict")
		if e.Error.Retryable || e.OperationID != args["operation_id"] {
			t.Errorf("conflict = %+v, want not retryable and naming the operation_id", e)
		}
		if !strings.Contains(text(res), "new operation_id") {
			t.Errorf("conflict text %q should say a new ticket needs a new operation_id", text(res))
		}
		if n := env.CountTickets(t, tenant); n != 1 {
			t.Errorf("%d tickets, want only the first (%s)", n, first.TicketID)
		}
	})
}

func TestConcurrentDuplicateCallsMakeOneTicket(t *testing.T) {
	t.Parallel()
	const callers = 16
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		token := writer(t, env)
		args := ticketArgs(newOperationID(t))
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			answers = make([]*mcp.CallToolResult, callers)
		)
		for i := range callers {
			cs := env.Connect(t, token) // a separate client per caller
			wg.Go(func() {
				<-start
				res, err := callSettled(cs, mcptools.ToolCreateTicket, args)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				answers[i] = res // checked below: FailNow belongs to the test's goroutine
			})
		}
		close(start)
		wg.Wait()
		results := make([]mcptools.CreateTicketOut, callers)
		for i, res := range answers {
			if res == nil {
				t.FailNow() // the caller already reported why
			}
			results[i] = created(t, res)
		}

		fresh := 0
		for i, r := range results {
			if r.TicketID != results[0].TicketID {
				t.Errorf("caller %d got ticket %s, caller 0 got %s", i, r.TicketID, results[0].TicketID)
			}
			if !r.Replayed {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d callers saw a fresh create, want exactly 1", fresh)
		}
		if n := env.CountTickets(t, tenant); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}

// TestRetryAfterLostResponse loses the HTTP response of a create_ticket
// call that committed: the agent sees a failure, and its retry with the
// same operation_id must return the original ticket instead of a second.
func TestRetryAfterLostResponse(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		token := writer(t, env)
		proxy := faultproxy.Start(t, strings.TrimPrefix(env.URL, "http://"))
		viaProxy := servertest.Connect(t, "http://"+proxy.Addr()+"/mcp", token)
		args := ticketArgs(newOperationID(t))

		dropped := proxy.DropReplyAfter(mcptools.ToolCreateTicket)
		if res, err := servertest.TryCall(viaProxy, mcptools.ToolCreateTicket, args); err == nil {
			t.Fatalf("call through a dropped connection succeeded: %s", text(res))
		}
		<-dropped

		retry := created(t, servertest.Call(t, env.Connect(t, token), mcptools.ToolCreateTicket, args))
		if !retry.Replayed {
			t.Errorf("retry created a ticket instead of replaying the lost one")
		}
		if n := env.CountTickets(t, tenant); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}

// TestOperationIDsAreTenantScoped: the same operation_id under another
// tenant reveals nothing about the first tenant's use and creates the other
// tenant's own ticket.
func TestOperationIDsAreTenantScoped(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		env.SeedProject(t, "globex")
		a := env.Connect(t, writer(t, env))
		b := env.Connect(t, env.Token(t, "globex", authn.ScopeRead, authn.ScopeWrite))
		args := ticketArgs(newOperationID(t))
		ticketA := created(t, servertest.Call(t, a, mcptools.ToolCreateTicket, args))

		st := servertest.Decode[contract.OperationStatus](t,
			servertest.Call(t, b, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": args["operation_id"]}))
		if st.Status != "not_found" || st.TicketID != "" || st.Ticket != nil {
			t.Errorf("tenant B sees tenant A's operation: %+v", st)
		}
		pv := servertest.Decode[mcptools.PreviewTicketOut](t, servertest.Call(t, b, mcptools.ToolPreviewTicket, args))
		if pv.Would != "create" || pv.ExistingTicketID != "" {
			t.Errorf("tenant B's preview = %+v, want would=create and nothing existing", pv)
		}
		toolError(t, servertest.Call(t, b, mcptools.ToolGetTicket, map[string]any{"id": ticketA.TicketID}), "not_found")

		ticketB := created(t, servertest.Call(t, b, mcptools.ToolCreateTicket, args))
		if ticketB.Replayed || ticketB.TicketID == ticketA.TicketID {
			t.Errorf("tenant B got %+v, want a fresh ticket of its own", ticketB)
		}
		if na, nb := env.CountTickets(t, tenant), env.CountTickets(t, "globex"); na != 1 || nb != 1 {
			t.Errorf("tickets: %d for A, %d for B; want 1 each", na, nb)
		}
	})
}

// TestCommitReplyLost loses PostgreSQL's reply to a create's commit: the
// tool must say outcome_unknown (never a failure), get_operation_status
// must then find the committed ticket, and a retry must replay it. A create
// with nothing else to commit is one statement outside a transaction, whose
// reply is its commit's (the title is among its arguments, and only there);
// one under a parent ends in COMMIT.
func TestCommitReplyLost(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		parent bool
		commit func(p *faultproxy.Proxy) <-chan struct{}
	}{
		{"OneStatement", false, func(p *faultproxy.Proxy) <-chan struct{} {
			return p.DropReplyAfter(ticketArgs("")["title"].(string), dbtest.PostgresStatementEnd)
		}},
		{"Transaction", true, func(p *faultproxy.Proxy) <-chan struct{} { return p.DropReplyAfter(dbtest.PostgresCommit) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d, proxy := dbtest.PostgresViaProxy(t)
			t.Cleanup(func() { _ = d.Close() })
			env := startEnv(t, d)
			cs := env.Connect(t, writer(t, env))
			args, before := ticketArgs(newOperationID(t)), int64(0)
			if c.parent {
				parent := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, with(ticketArgs(newOperationID(t)), "title", "Office move")))
				args, before = with(args, "parent", parent.Ticket.Key), 1
			}

			dropped := c.commit(proxy)
			res := servertest.Call(t, cs, mcptools.ToolCreateTicket, args)
			<-dropped

			e := toolError(t, res, "outcome_unknown")
			if e.Status != "unknown" || !e.Error.Retryable || e.OperationID != args["operation_id"] {
				t.Errorf("outcome_unknown error = %+v, want status unknown, retryable, with the operation_id", e)
			}
			if !strings.Contains(text(res), "get_operation_status") {
				t.Errorf("text %q should point to get_operation_status", text(res))
			}

			st := servertest.Decode[contract.OperationStatus](t,
				servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": args["operation_id"]}))
			if st.Status != "succeeded" || st.Ticket == nil || st.TicketID != st.Ticket.ID {
				t.Fatalf("status after a lost commit reply = %+v, want succeeded with the ticket", st)
			}
			retry := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
			if !retry.Replayed || retry.TicketID != st.TicketID {
				t.Errorf("retry = %+v, want a replay of %s", retry, st.TicketID)
			}
			if n := env.CountTickets(t, tenant) - before; n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
	}
}
