package mcptools_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestPrunedWriteIsExpired is issue 28's reproduction over MCP (Streamable
// HTTP): after ticketd prune, get_operation_status of a create that ran
// answers status expired with a next step that says it ran, never
// not_found; a retry with the same operation_id, same input or other,
// answers operation_expired, saying which, and makes no second ticket; and
// another tenant asking about the same ID gets not_found, exactly as for an
// ID nobody used.
func TestPrunedWriteIsExpired(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		cs := env.Connect(t, writer(t, env))
		args := ticketArgs(newOperationID(t))
		created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, args))
		res, err := operations.NewLedger(d.Gorm, operations.Options{}).Prune(context.Background(), time.Now().Add(time.Minute), operations.DefaultPruneBatch, false)
		if err != nil || res.Deleted != 1 {
			t.Fatalf("prune = %+v, %v; want 1 deleted", res, err)
		}

		lookup := map[string]any{"operation_id": args["operation_id"]}
		st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, lookup))
		if st.Status != "expired" || st.Action != "create_ticket" || st.UpdatedAt == nil || st.CreatedAt != nil {
			t.Errorf("get_operation_status after prune = %+v, want status expired for create_ticket, updated_at the time of pruning and no created_at", st)
		}
		if !strings.Contains(st.NextStep, "ran") || strings.Contains(st.NextStep, "safe") || strings.Contains(st.NextStep, "Nothing ran") {
			t.Errorf("next_step %q must say the write ran, never invite a fresh call", st.NextStep)
		}

		for input, call := range map[string]map[string]any{"the same as": args, "differs from": with(args, "title", "Another printer")} {
			out := toolError(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, call), "operation_expired")
			if !strings.Contains(out.Error.Message, input) {
				t.Errorf("retry whose input %s the pruned write's: message %q does not say so", input, out.Error.Message)
			}
		}
		if n := env.CountTickets(t, tenant); n != 1 {
			t.Errorf("%d tickets after retrying a pruned create, want 1", n)
		}
		if n := env.CountOperations(t, tenant); n != 0 {
			t.Errorf("%d operation records after retrying a pruned create, want 0", n)
		}

		env.SeedProject(t, "globex")
		theirs := env.Connect(t, env.Token(t, "globex", authn.ScopeRead))
		other := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, theirs, mcptools.ToolGetOperationStatus, lookup))
		unused := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, theirs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": newOperationID(t)}))
		if other.Status != "not_found" || other.Action != "" || other.UpdatedAt != nil || other.NextStep != unused.NextStep {
			t.Errorf("another tenant's lookup of a pruned ID = %+v, want not_found exactly as an unused ID (%+v)", other, unused)
		}
	})
}
