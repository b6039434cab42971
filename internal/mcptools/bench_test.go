package mcptools_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// BenchmarkMCPServer is one tools/call as the go-sdk client sends it on
// protocol 2026-07-28, POSTed with a plain net/http client over a real
// listener to the whole ticketd stack (token verification, edge, SDK,
// schemas, service, database), so B/op and allocs/op are the server's plus
// net/http's small client share, not the go-sdk client's. create files a
// fresh operation, replay repeats one, update changes a title under a fresh
// operation, list reads 20 summaries. On a shared machine compare B/op,
// allocs/op and roundtrips/op (PostgreSQL messages that wait for an answer,
// BEGIN and COMMIT included); ns/op is for an idle one. Run with
//
//	go test -run '^$' -bench MCPServer -benchmem -benchtime 400x ./internal/mcptools/
func BenchmarkMCPServer(b *testing.B) {
	for _, dialect := range []string{"postgres", "sqlite"} {
		b.Run(dialect, func(b *testing.B) {
			var (
				d     *db.DB
				trips *dbtest.RoundTrips
			)
			if dialect == "postgres" {
				d, trips = dbtest.PostgresCounted(b)
			} else {
				d = dbtest.SQLite(b)
			}
			env := servertest.Start(b, d, servertest.Options{})
			env.SeedProject(b, "acme")
			post := poster(b, env, env.Token(b, "acme", authn.ScopeRead, authn.ScopeWrite))
			var key string
			for range 21 {
				key = createdKey(b, post(b, "create_ticket", createBody(uuid.NewString())))
			}
			replayID := uuid.NewString()
			post(b, "create_ticket", createBody(replayID))
			n := 0
			for _, c := range []struct {
				name, tool string
				args       func() string
			}{
				{"create", "create_ticket", func() string { return createBody(uuid.NewString()) }},
				{"replay", "create_ticket", func() string { return createBody(replayID) }},
				{"update", "update_ticket", func() string {
					n++
					return fmt.Sprintf(`{"operation_id":%q,"id":%q,"title":"Printer on fire, take %d"}`, uuid.NewString(), key, n)
				}},
				{"list", "list_tickets", func() string { return `{"project_id":"support","limit":20}` }},
			} {
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					start := trips.Count()
					for b.Loop() {
						post(b, c.tool, c.args())
					}
					if trips != nil {
						b.ReportMetric(float64(trips.Count()-start)/float64(b.N), "roundtrips/op")
					}
				})
			}
		})
	}
}

func createBody(operationID string) string {
	return `{"operation_id":"` + operationID + `","project_id":"support","title":"Printer on fire","labels":["hardware"]}`
}

// poster returns a function that calls tool with the JSON arguments args
// as token and returns the result, failing on anything but a successful
// tool result.
func poster(b *testing.B, env *servertest.Env, token string) func(b *testing.B, tool, args string) json.RawMessage {
	client := &http.Client{}
	return func(b *testing.B, tool, args string) json.RawMessage {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, err := http.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/call")
		req.Header.Set("Mcp-Name", tool)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			b.Fatal(err)
		}
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(got, &msg) != nil || msg.Result == nil ||
			bytes.Contains(msg.Result, []byte(`"isError":true`)) {
			b.Fatalf("%s: %d %s", tool, resp.StatusCode, got)
		}
		return msg.Result
	}
}

// createdKey returns the ticket key of a create_ticket result.
func createdKey(b *testing.B, result json.RawMessage) string {
	var r struct {
		StructuredContent struct {
			Ticket struct {
				Key string `json:"key"`
			} `json:"ticket"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(result, &r); err != nil || r.StructuredContent.Ticket.Key == "" {
		b.Fatalf("create_ticket result without a key: %v %s", err, result)
	}
	return r.StructuredContent.Ticket.Key
}
