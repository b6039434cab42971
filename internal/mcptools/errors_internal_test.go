package mcptools

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
)

// TestToolErrorsFollowTheErrorTable walks errcode.Table: every code a tool
// can fail with is an isError result with the row's code, retryability,
// operation status and agent step, and shows the error's own text only
// where the row allows it, never a driver's.
func TestToolErrorsFollowTheErrorTable(t *testing.T) {
	t.Parallel()
	const opID = "0190f1c4-6b8a-7cc2-9a3e-5d1f2e3a4b5c"
	errcodetest.Walk(t, func(t *testing.T, row errcode.Row, err error) {
		if err == nil || row.MCP != errcode.MCPToolError {
			return
		}
		res, out, _ := failure[struct{}](err, opID)
		e := out.err
		if e == nil || !res.IsError {
			t.Fatalf("failure(%v) is no tool error: %+v", err, res)
		}
		if e.Error.Code != string(row.Code) || e.Error.Retryable != row.Retryable || e.Status != string(row.OperationStatus) || e.OperationID != opID {
			t.Errorf("failure(%v) = %+v, want the row %+v", err, e, row)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !strings.HasSuffix(text, row.AgentStep) {
			t.Errorf("text %q does not end with the row's agent step %q", text, row.AgentStep)
		}
		if strings.Contains(text, "10.0.0.7") || strings.Contains(e.Error.Message, "ticketd_owner") {
			t.Errorf("%s tool error shows the driver's text: %q", row.Code, text)
		}
		if !row.ShowCause && e.Error.Message != row.Public {
			t.Errorf("message %q, want the row's public message %q", e.Error.Message, row.Public)
		}
	})
}
