package server_test

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/server"
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

// BenchmarkRefusal is what turning a request away costs the server, through
// the whole handler in process (no network): CPU per refusal from getrusage
// (cpu-ns/op, the figure docs/contract.md#fair-share bounds at well under 0.1 ms; ns/op is
// wall time, which a shared machine inflates) and allocs/op, which load does
// not move. RateLimitedToolCall2026 is the refusal a 2026-07-28 client
// (ticketd-load's flood) gets, whose result names the server in _meta. Run with
// go test -run '^$' -bench Refusal -benchtime 2000x -benchmem ./internal/server/
func BenchmarkRefusal(b *testing.B) {
	d := dbtest.SQLite(b)
	env := servertest.Start(b, d, servertest.Options{}) // for its service, secret and tokens
	v, err := authn.NewVerifier(context.Background(), authn.Config{Issuer: servertest.Issuer, Audience: env.Endpoint, HS256Secret: env.Secret})
	if err != nil {
		b.Fatal(err)
	}
	h, err := server.New(server.Config{Service: env.Service, Verifier: v, PublicURL: env.URL, Issuer: servertest.Issuer,
		ConsoleSessions: console.NewSessions(d.Gorm),
		// Refusals answered at once: the CPU they cost is what is
		// measured, not the tarpit's hold.
		Edge: server.Edge{Limits: limits.Config{Concurrency: 1, WritesPerSecond: 0.001, Burst: 1, RefusalHold: -1}}})
	if err != nil {
		b.Fatal(err)
	}
	tok := env.Token(b, "acme", authn.ScopeRead, authn.ScopeWrite)
	busy := env.Token(b, "busy", authn.ScopeRead, authn.ScopeWrite)
	request := func(token, authorization string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(callBody("create_ticket", createArgs())))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", cmp.Or(authorization, "Bearer "+token))
		return r
	}
	request2026 := func(token string) *http.Request {
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"create_ticket","arguments":` + createArgs() +
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		r := httptest.NewRequest(http.MethodPost, env.Endpoint, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
	serve := func(r *http.Request) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	// Tenant "busy" holds its one slot with an upload that never ends.
	stalled, finish := io.Pipe()
	b.Cleanup(func() { _ = finish.Close() })
	reading := make(chan struct{})
	held := request(busy, "")
	held.Body, held.ContentLength = readSignal{stalled, reading}, -1
	go serve(held)
	<-reading
	serve(request(tok, "")) // spends acme's one write
	huge := "Bearer " + strings.Repeat("A", 900<<10)
	for _, c := range []struct {
		name string
		req  func() *http.Request
		want int
	}{
		{"ConcurrencyCap", func() *http.Request { return request(busy, "") }, http.StatusTooManyRequests},
		{"RateLimitedToolCall", func() *http.Request { return request(tok, "") }, http.StatusOK},
		{"RateLimitedToolCall2026", func() *http.Request { return request2026(tok) }, http.StatusOK},
		{"BadSignature", func() *http.Request { return request(tok[:len(tok)-4]+"AAAA", "") }, http.StatusUnauthorized},
		{"HugeAuthorization", func() *http.Request { return request("", huge) }, http.StatusBadRequest},
	} {
		b.Run(c.name, func(b *testing.B) {
			reqs := make([]*http.Request, b.N)
			for i := range reqs {
				reqs[i] = c.req()
			}
			before := cpuTime(b)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if got := serve(reqs[i]); got != c.want {
					b.Fatalf("answered %d, want %d", got, c.want)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64((cpuTime(b)-before).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readSignal is a body that closes reading when it is first read.
type readSignal struct {
	io.Reader
	reading chan struct{}
}

func (r readSignal) Read(p []byte) (int, error) {
	select {
	case <-r.reading:
	default:
		close(r.reading)
	}
	return r.Reader.Read(p)
}

func (readSignal) Close() error { return nil }
