package mcptools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/faultproxy"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestBulkOfFiftyRetriedAfterLostResponse loses the HTTP response of a bulk
// update of 50 tickets that committed: the retry answers the versions the
// bulk recorded and changes nothing, even after one ticket moved on.
func TestBulkOfFiftyRetriedAfterLostResponse(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		env := startEnv(t, d)
		token := writer(t, env)
		cs := env.Connect(t, token)
		var ids []string
		for range 50 {
			ids = append(ids, created(t, servertest.Call(t, cs, mcptools.ToolCreateTicket, ticketArgs(newOperationID(t)))).Ticket.Key)
		}
		proxy := faultproxy.Start(t, strings.TrimPrefix(env.URL, "http://"))
		viaProxy := servertest.Connect(t, "http://"+proxy.Addr()+"/mcp", token)
		args := map[string]any{"operation_id": newOperationID(t), "ids": ids, "status": "resolved", "add_labels": []string{"batch"}}

		dropped := proxy.DropReplyAfter(mcptools.ToolBulkUpdateTickets)
		if res, err := servertest.TryCall(viaProxy, mcptools.ToolBulkUpdateTickets, args); err == nil {
			t.Fatalf("call through a dropped connection succeeded: %s", text(res))
		}
		<-dropped
		// The proxy gives up waiting for the reply after 5 s; on a loaded
		// machine the bulk may still be running then, so wait for its record
		// before counting what it wrote.
		waitRecorded(t, d, args["operation_id"].(string))
		events := dbtest.CountRows(t, d, "ticket_events", tenant)
		servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": newOperationID(t), "id": ids[9], "status": "open"})

		res := servertest.Call(t, cs, mcptools.ToolBulkUpdateTickets, args)
		retry := servertest.Decode[mcptools.BulkUpdateTicketsOut](t, res)
		if res.IsError || !retry.Replayed || len(retry.Tickets) != 50 {
			t.Fatalf("retry = %s; want the lost bulk replayed", text(res))
		}
		for i, it := range retry.Tickets {
			if it.Key != ids[i] || it.Version != 2 || it.Changes["status"].To != "resolved" {
				t.Errorf("replayed ticket %d = %s v%d %v; want %s at the recorded v2, resolved", i, it.Key, it.Version, it.Changes, ids[i])
			}
		}
		now := servertest.Decode[mcptools.GetTicketOut](t, servertest.Call(t, cs, mcptools.ToolGetTicket, map[string]any{"id": ids[9]}))
		if got := now.Ticket; got.Status != "open" || got.Version != 3 {
			t.Errorf("%s after the replay is %s v%d; the replay must not resolve it again", ids[9], got.Status, got.Version)
		}
		if got := dbtest.CountRows(t, d, "ticket_events", tenant); got != events+1 {
			t.Errorf("%d events after the replay, want %d (only the reopen's)", got, events+1)
		}
		if n := env.CountOperations(t, tenant); n != 52 {
			t.Errorf("%d operations, want 50 creates, 1 bulk, 1 update", n)
		}
	})
}

// waitRecorded waits until operationID's record in tenant is no longer
// pending: its write has committed or rolled back.
func waitRecorded(t *testing.T, d *db.DB, operationID string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var status string
		err := d.Gorm.Raw(`SELECT status FROM operations WHERE tenant_id = ? AND operation_id = ?`, tenant, operationID).Scan(&status).Error
		if err != nil {
			t.Fatal(err)
		}
		if status != "" && status != "pending" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("operation %s still %q after a minute", operationID, status)
		}
	}
}
