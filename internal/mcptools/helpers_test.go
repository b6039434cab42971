package mcptools_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// allTools serves every toolset, for tests of tools outside the default
// ones (bulk_update_tickets).
var allTools = server.Edge{Toolsets: toolsets(mcptools.ToolsetAll)}

// toolsets parses a TICKETD_TOOLSETS value the test knows is valid.
func toolsets(s string) mcptools.Toolsets {
	t, err := mcptools.ParseToolsets(s)
	if err != nil {
		panic(err)
	}
	return t
}

// newOperationID returns a fresh v7 operation ID, as an agent would make.
func newOperationID(tb testing.TB) string {
	tb.Helper()
	id, err := uuid.NewV7()
	if err != nil {
		tb.Fatal(err)
	}
	return id.String()
}

// ticketArgs are create_ticket arguments for a valid ticket in the seeded
// project.
func ticketArgs(operationID string) map[string]any {
	return map[string]any{
		"operation_id": operationID,
		"project_id":   "support",
		"title":        "Printer on fire",
		"description":  "Third floor, near the kitchen.",
		"priority":     "urgent",
		"labels":       []string{"Hardware", " printer "},
	}
}

// with returns a copy of args with key set to value.
func with(args map[string]any, key string, value any) map[string]any {
	out := make(map[string]any, len(args)+1)
	for k, v := range args {
		out[k] = v
	}
	out[key] = value
	return out
}

// without returns a copy of args without key.
func without(args map[string]any, key string) map[string]any {
	out := with(args, key, nil)
	delete(out, key)
	return out
}

// created asserts res is a successful create_ticket result and returns it.
func created(tb testing.TB, res *mcp.CallToolResult) mcptools.CreateTicketOut {
	tb.Helper()
	if res.IsError {
		tb.Fatalf("create_ticket failed: %s", text(res))
	}
	out := servertest.Decode[mcptools.CreateTicketOut](tb, res)
	if out.Status != "succeeded" || out.TicketID == "" || out.Ticket.ID != out.TicketID {
		tb.Fatalf("create_ticket result incomplete: %+v", out)
	}
	return out
}

// toolError asserts res is a tool error with code and returns its payload.
// Every tool error must also carry a text block with a next step.
func toolError(tb testing.TB, res *mcp.CallToolResult, code string) mcptools.ErrorOut {
	tb.Helper()
	if !res.IsError {
		tb.Fatalf("want tool error %s, got success: %s", code, text(res))
	}
	out := servertest.Decode[mcptools.ErrorOut](tb, res)
	if out.Error.Code != code {
		tb.Fatalf("error code = %q, want %q (%s)", out.Error.Code, code, text(res))
	}
	if out.Error.Message == "" {
		tb.Errorf("error %s has no message", code)
	}
	if txt := text(res); !strings.Contains(txt, code) || len(txt) <= len(out.Error.Message)+len(code) {
		tb.Errorf("error text %q should name the code and say what to do next", txt)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callSettled calls tool like an agent that retries operation_in_progress
// (the contract's answer while another call holds the key) unchanged, for up
// to a minute: a bound on a hang, not on the pace of a loaded machine. It is
// safe to use from any goroutine.
func callSettled(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	for deadline := time.Now().Add(time.Minute); ; {
		res, err := servertest.TryCall(cs, tool, args)
		if err != nil || !res.IsError || time.Now().After(deadline) || !strings.Contains(text(res), "operation_in_progress") {
			return res, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// summaryPage is a list_tickets answer with its default detail.
type summaryPage struct {
	Tickets    []contract.TicketSummary `json:"tickets"`
	NextCursor string                   `json:"next_cursor"`
}
