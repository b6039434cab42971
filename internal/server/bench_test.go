package server_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// BenchmarkMCPCall is one tools/call over real HTTP through the whole edge
// (bearer token, SDK transport, schemas, logging) against SQLite, client
// included. On a shared machine compare B/op and allocs/op, which load does
// not move; ns/op is for an idle machine. Run with
// go test -run '^$' -bench MCPCall -benchmem ./internal/server/
func BenchmarkMCPCall(b *testing.B) {
	env := servertest.Start(b, dbtest.SQLite(b), servertest.Options{})
	env.SeedProject(b, "acme")
	cs := env.Connect(b, env.Token(b, "acme", authn.ScopeRead, authn.ScopeWrite))
	for _, c := range []struct {
		tool string
		args func() map[string]any
	}{
		{"list_projects", func() map[string]any { return map[string]any{} }},
		{"create_ticket", func() map[string]any {
			return map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "Printer on fire"}
		}},
		{"list_tickets", func() map[string]any { return map[string]any{"project_id": "support", "limit": 20} }},
	} {
		b.Run(c.tool, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := servertest.TryCall(cs, c.tool, c.args())
				if err != nil || res.IsError {
					b.Fatalf("%s: %v %+v", c.tool, err, res)
				}
			}
		})
	}
}
