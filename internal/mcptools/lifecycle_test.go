package mcptools_test

import (
	"strconv"
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

// lifecycleWrite is a write on an existing ticket that must keep the retry
// contract create_ticket keeps: its tool, its arguments for one intent, the
// same operation ID with another intent, and how many changes the ticket
// shows from it (version bumps for an update, comments for a comment).
type lifecycleWrite struct {
	tool    string
	args    func(operationID, ticketID string) map[string]any
	other   func(args map[string]any) map[string]any
	changes func(t *testing.T, cs *mcp.ClientSession, ticketID string) int
}

var lifecycleWrites = []lifecycleWrite{
	{
		tool: mcptools.ToolUpdateTicket,
		args: func(op, ticket string) map[string]any {
			return map[string]any{"operation_id": op, "id": ticket, "status": "in_progress", "assignee": "agent"}
		},
		other: func(args map[string]any) map[string]any { return with(args, "status", "resolved") },
		changes: func(t *testing.T, cs *mcp.ClientSession, ticket string) int {
			t.Helper()
			got := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": ticket}))
			return int(got.Ticket.Version) - 1
		},
	},
	{
		tool: mcptools.ToolAddComment,
		args: func(op, ticket string) map[string]any {
			return map[string]any{"operation_id": op, "id": ticket, "body": "Restarted the spooler; printing again."}
		},
		other: func(args map[string]any) map[string]any { return with(args, "body", "Something else entirely.") },
		changes: func(t *testing.T, cs *mcp.ClientSession, ticket string) int {
			t.Helper()
			got := servertest.Decode[mcptools.ListCommentsOut](t, servertest.Call(t, cs, mcptools.ToolListComments, map[string]any{"id": ticket}))
			return len(got.Comments)
		},
	},
}

// writeOut is what the checks below read of either write's result: whether
// it replayed and the identity of what it did (the version an update
// produced, the comment added).
type writeOut struct {
	Status   string           `json:"status"`
	Replayed bool             `json:"replayed"`
	TicketID string           `json:"ticket_id"`
	Version  int64            `json:"version"`
	Comment  contract.Comment `json:"comment"`
}

func (o writeOut) outcome() string {
	return o.TicketID + "/" + o.Comment.ID + "/" + strconv.FormatInt(o.Version, 10)
}

func wrote(tb testing.TB, res *mcp.CallToolResult) writeOut {
	tb.Helper()
	if res.IsError {
		tb.Fatalf("write failed: %s", text(res))
	}
	out := servertest.Decode[writeOut](tb, res)
	if out.Status != "succeeded" || out.TicketID == "" {
		tb.Fatalf("write result incomplete: %+v", out)
	}
	return out
}

// eachWrite runs check for every lifecycle write on both dialects, with a
// fresh ticket of tenant's to act on.
func eachWrite(t *testing.T, check func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticketID string)) {
	t.Parallel()
	for _, w := range lifecycleWrites {
		t.Run(w.tool, func(t *testing.T) {
			t.Parallel()
			dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
				env := startEnv(t, d)
				tk := created(t, servertest.Call(t, env.Connect(t, writer(t, env)), mcptools.ToolCreateTicket, ticketArgs(newOperationID(t))))
				check(t, env, w, tk.TicketID)
			})
		})
	}
}

func TestLifecycleWriteTwiceIsOneChange(t *testing.T) {
	eachWrite(t, func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticket string) {
		cs := env.Connect(t, writer(t, env))
		args := w.args(newOperationID(t), ticket)
		first := wrote(t, servertest.Call(t, cs, w.tool, args))
		second := wrote(t, servertest.Call(t, cs, w.tool, args))
		if first.Replayed || !second.Replayed || first.outcome() != second.outcome() {
			t.Errorf("first %+v, second %+v: want the second to replay the first", first, second)
		}
		if n := w.changes(t, cs, ticket); n != 1 {
			t.Errorf("%d changes, want 1", n)
		}
	})
}

func TestLifecycleWriteSameIDOtherInputConflicts(t *testing.T) {
	eachWrite(t, func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticket string) {
		cs := env.Connect(t, writer(t, env))
		args := w.args(newOperationID(t), ticket)
		wrote(t, servertest.Call(t, cs, w.tool, args))
		e := toolError(t, servertest.Call(t, cs, w.tool, w.other(args)), "idempotency_conflict")
		if e.Error.Retryable || e.OperationID != args["operation_id"] {
			t.Errorf("conflict = %+v, want not retryable, naming the operation_id", e)
		}
		if n := w.changes(t, cs, ticket); n != 1 {
			t.Errorf("%d changes, want 1", n)
		}
	})
}

func TestLifecycleWriteConcurrentDuplicatesMakeOneChange(t *testing.T) {
	const callers = 8
	eachWrite(t, func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticket string) {
		token := writer(t, env)
		args := w.args(newOperationID(t), ticket)
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			answers = make([]*mcp.CallToolResult, callers)
		)
		for i := range callers {
			cs := env.Connect(t, token)
			wg.Go(func() {
				<-start
				res, err := callSettled(cs, w.tool, args)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				answers[i] = res
			})
		}
		close(start)
		wg.Wait()
		fresh := 0
		var first writeOut
		for i, res := range answers {
			if res == nil {
				t.FailNow() // the caller already reported why
			}
			out := wrote(t, res)
			if i == 0 {
				first = out
			}
			if out.outcome() != first.outcome() {
				t.Errorf("caller %d got %+v, caller 0 got %+v", i, out, first)
			}
			if !out.Replayed {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d callers saw a fresh write, want exactly 1", fresh)
		}
		if n := w.changes(t, env.Connect(t, token), ticket); n != 1 {
			t.Errorf("%d changes, want 1", n)
		}
	})
}

// TestLifecycleWriteRetryAfterLostResponse cuts the HTTP response of a
// write that committed; the retry must answer the original outcome.
func TestLifecycleWriteRetryAfterLostResponse(t *testing.T) {
	eachWrite(t, func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticket string) {
		token := writer(t, env)
		proxy := faultproxy.Start(t, strings.TrimPrefix(env.URL, "http://"))
		viaProxy := servertest.Connect(t, "http://"+proxy.Addr()+"/mcp", token)
		args := w.args(newOperationID(t), ticket)

		dropped := proxy.DropReplyAfter(w.tool)
		if res, err := servertest.TryCall(viaProxy, w.tool, args); err == nil {
			t.Fatalf("call through a dropped connection succeeded: %s", text(res))
		}
		<-dropped

		cs := env.Connect(t, token)
		if retry := wrote(t, servertest.Call(t, cs, w.tool, args)); !retry.Replayed {
			t.Errorf("retry applied the write again instead of replaying the lost one: %+v", retry)
		}
		if n := w.changes(t, cs, ticket); n != 1 {
			t.Errorf("%d changes, want 1", n)
		}
	})
}

// TestLifecycleWriteIDsAreTenantScoped: another tenant's use of the same
// operation_id is invisible and does not stop this tenant's own write.
func TestLifecycleWriteIDsAreTenantScoped(t *testing.T) {
	eachWrite(t, func(t *testing.T, env *servertest.Env, w lifecycleWrite, ticketA string) {
		env.SeedProject(t, "globex")
		a := env.Connect(t, writer(t, env))
		b := env.Connect(t, env.Token(t, "globex", authn.ScopeRead, authn.ScopeWrite))
		ticketB := created(t, servertest.Call(t, b, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).TicketID
		op := newOperationID(t)
		wrote(t, servertest.Call(t, a, w.tool, w.args(op, ticketA)))

		st := servertest.Decode[contract.OperationStatus](t,
			servertest.Call(t, b, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": op}))
		if st.Status != "not_found" || st.TicketID != "" {
			t.Errorf("tenant B sees tenant A's operation: %+v", st)
		}
		toolError(t, servertest.Call(t, b, w.tool, w.args(newOperationID(t), ticketA)), "not_found")
		if out := wrote(t, servertest.Call(t, b, w.tool, w.args(op, ticketB))); out.Replayed || out.TicketID != ticketB {
			t.Errorf("tenant B got %+v, want a fresh write of its own ticket", out)
		}
		if na, nb := w.changes(t, a, ticketA), w.changes(t, b, ticketB); na != 1 || nb != 1 {
			t.Errorf("changes: %d for A, %d for B; want 1 each", na, nb)
		}
	})
}

// TestLifecycleWriteCommitReplyLost loses PostgreSQL's reply to the write's
// COMMIT: outcome_unknown, then get_operation_status finds what committed,
// naming the action and what it made, and a retry replays it.
func TestLifecycleWriteCommitReplyLost(t *testing.T) {
	t.Parallel()
	for _, w := range lifecycleWrites {
		t.Run(w.tool, func(t *testing.T) {
			t.Parallel()
			d, proxy := dbtest.PostgresViaProxy(t)
			t.Cleanup(func() { _ = d.Close() })
			env := startEnv(t, d)
			cs := env.Connect(t, writer(t, env))
			ticket := created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).TicketID
			args := w.args(newOperationID(t), ticket)

			dropped := proxy.DropReplyAfter(dbtest.PostgresCommit)
			res := servertest.Call(t, cs, w.tool, args)
			<-dropped
			if e := toolError(t, res, "outcome_unknown"); e.Status != "unknown" || e.OperationID != args["operation_id"] {
				t.Errorf("outcome_unknown error = %+v, want status unknown with the operation_id", e)
			}

			st := servertest.Decode[contract.OperationStatus](t,
				servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": args["operation_id"]}))
			if st.Status != "succeeded" || st.Action != w.tool || st.TicketID != ticket || st.Ticket == nil ||
				!strings.Contains(st.NextStep, w.tool) {
				t.Fatalf("status after a lost COMMIT reply = %+v, want %s succeeded on the ticket", st, w.tool)
			}
			retry := wrote(t, servertest.Call(t, cs, w.tool, args))
			if !retry.Replayed || retry.Version != st.Version || retry.Comment.ID != st.CommentID {
				t.Errorf("retry = %+v, want a replay of %+v", retry, st)
			}
			if w.tool == mcptools.ToolUpdateTicket && st.Version != 2 || w.tool == mcptools.ToolAddComment && st.CommentID == "" {
				t.Errorf("status %+v lacks what %s made", st, w.tool)
			}
			if n := w.changes(t, cs, ticket); n != 1 {
				t.Errorf("%d changes, want 1", n)
			}
		})
	}
}
