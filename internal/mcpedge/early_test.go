package mcpedge

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// TestEarlyLimitsRefusesOnlyValidCalls: while the tenant's write bucket is
// empty, EarlyLimits refuses a valid tools/call of a write tool the token
// may call, read as CheckMessage reads it (escapes included), and leaves
// everything else to the full checks: a message they refuse as invalid,
// one without an id, another method, a tool of the other bucket, one the
// token may not call.
func TestEarlyLimitsRefusesOnlyValidCalls(t *testing.T) {
	t.Parallel()
	tenants, err := limits.New(limits.Config{WritesPerSecond: 1, ReadsPerSecond: 1, Burst: 1})
	if err != nil {
		t.Fatal(err)
	}
	tenants.Allow("acme", limits.Write) // the one token: the bucket is empty now
	opts := EarlyLimitsOptions{
		Limits: tenants,
		Tenant: func(context.Context) (string, bool) { return "acme", true },
		KindFor: func(tool string) limits.Kind {
			if tool == "list_tickets" {
				return limits.Read
			}
			return limits.Write
		},
		ScopeFor: func(tool string) (string, bool) {
			return map[string]string{"create_ticket": "w", "list_tickets": "r", "admin_thing": "admin"}[tool], tool != "unknown"
		},
		Scopes: func(context.Context) []string { return []string{"r", "w"} },
	}
	decide := func(msg string) (Call, bool) {
		r := httptest.NewRequest("POST", "/mcp", strings.NewReader(msg))
		r.Body = heldBody{ReadCloser: r.Body, held: []byte(msg)}
		call, wait, refuse := opts.refuse(r)
		if refuse && (wait <= 0 || wait > 2*time.Second) {
			t.Errorf("refuse(%s) names a wait of %v", msg, wait)
		}
		return call, refuse
	}
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_ticket","arguments":{"a":[1,{"b":"}\""}]}}}`,
		` { "params" : { "arguments" : {} , "name" : "create_ticket" } , "method" : "tools/call" , "id" : "a\"b" } `,
		`{"id":1,"method":"tools/\u0063all","params":{"name":"create\u005fticket","arguments":{}}}`,
	} {
		if call, refuse := decide(msg); !refuse || call.Tool != "create_ticket" {
			t.Errorf("refuse(%s) = %+v, %v; want refused", msg, call, refuse)
		}
	}
	for _, msg := range []string{
		``, `[]`, `[{"id":1,"method":"tools/call"}]`, `{"id":1,"method":"tools/call"`, `{"id":1,"method":"tools/call"} x`,
		`{"id":1,"method":"tools/call","params":{"name":"list_tickets","name":"create_ticket"}}`,
		`{"id":1,"id":2,"method":"tools/call","params":{"name":"create_ticket"}}`,
		`{"id":1.5,"method":"tools/call","params":{"name":"create_ticket"}}`,
		`{"id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":null}}`,
		"{\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"create_ticket\",\"arguments\":{\"t\":\"\xff\"}}}",
		`{"method":"tools/call","params":{"name":"create_ticket"}}`,
		`{"id":1,"method":"ping"}`,
		`{"id":1,"method":"tools/call","params":{"name":"list_tickets"}}`,
		`{"id":1,"method":"tools/call","params":{"name":"admin_thing"}}`,
		`{"id":1,"method":"tools/call","params":{"name":"unknown"}}`,
	} {
		if call, refuse := decide(msg); refuse {
			t.Errorf("refuse(%s) = %+v; want it left to the full checks", msg, call)
		}
	}
}

// heldBody is a body Bodies has read, as EarlyLimits finds it.
type heldBody struct {
	io.ReadCloser
	held []byte
}

func (b heldBody) Held() []byte { return b.held }
