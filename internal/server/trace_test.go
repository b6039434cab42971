package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestSpanTreeThroughTheRealServer creates a ticket over REST through the
// real edge and checks the trace: one server span for the request, the
// ledger run under it, and the ledger's SQL under that.
//
// It replaces the process's global tracer provider, as observe.Setup does,
// so it does not run in parallel: the package's parallel tests start after
// it and then see a provider that records nothing.
func TestSpanTreeThroughTheRealServer(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetTracerProvider(tp)

	d := dbtest.SQLite(t)
	if err := observe.TraceGORM(d.Gorm); err != nil {
		t.Fatal(err)
	}
	env := servertest.Start(t, d, servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", authn.ScopeRead, authn.ScopeWrite)
	exporter.Reset()

	if code := postTicket(t, env, token, uuid.NewString(), `{"project_id":"support","title":"Traced"}`); code != http.StatusCreated {
		t.Fatalf("POST /api/v1/tickets = %d, want 201", code)
	}

	// The client can read the answer before the server span ends (and is
	// exported), so wait for the ledger span's parent to arrive.
	got := spansOnceParentEnded(t, exporter)
	var server *tracetest.SpanStub
	for i, s := range got {
		if s.SpanKind == trace.SpanKindServer {
			if server != nil {
				t.Fatalf("two server spans: %q and %q", server.Name, s.Name)
			}
			server = &got[i]
		}
	}
	if server == nil || server.Name != "POST /api/v1/tickets" || server.Parent.IsValid() {
		t.Fatalf("spans %v: want one root server span named after the route", names(got))
	}
	var ledger *tracetest.SpanStub
	for i, s := range got {
		if s.Name == "ledger create_ticket" {
			ledger = &got[i]
		}
	}
	if ledger == nil || ledger.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Fatalf("spans %v: want the ledger span under the request span", names(got))
	}
	var inserts int
	for _, s := range got {
		if s.SpanKind != trace.SpanKindClient {
			continue
		}
		if s.SpanContext.TraceID() != server.SpanContext.TraceID() {
			t.Errorf("SQL span %q is in another trace", s.Name)
		}
		if s.Name == "INSERT tickets" || s.Name == "INSERT operations" {
			inserts++
			if s.Parent.SpanID() != ledger.SpanContext.SpanID() {
				t.Errorf("SQL span %q is not under the ledger span", s.Name)
			}
		}
	}
	if inserts < 2 {
		t.Errorf("spans %v: want the ticket and operation inserts as SQL spans under the ledger", names(got))
	}

	// Over MCP the same: the ledger under the POST /mcp that carried the call.
	session := env.Connect(t, token)
	exporter.Reset()
	res := servertest.Call(t, session, mcptools.ToolCreateTicket, map[string]any{"operation_id": uuid.NewString(), "project_id": "support", "title": "Traced over MCP"})
	if res.IsError {
		t.Fatalf("create_ticket failed: %+v", res.StructuredContent)
	}
	got = spansOnceParentEnded(t, exporter)
	byID := make(map[trace.SpanID]tracetest.SpanStub, len(got))
	for _, s := range got {
		byID[s.SpanContext.SpanID()] = s
	}
	var found bool
	for _, s := range got {
		if s.Name != "ledger create_ticket" {
			continue
		}
		found = true
		if parent, ok := byID[s.Parent.SpanID()]; !ok || parent.Name != "POST /mcp" || parent.SpanKind != trace.SpanKindServer {
			t.Errorf("spans %v: the MCP ledger span's parent is %q, want the POST /mcp server span", names(got), parent.Name)
		}
	}
	if !found {
		t.Errorf("spans %v: no ledger span for the MCP call", names(got))
	}
}

// spansOnceParentEnded returns the exported spans once the ledger span's
// parent is among them, failing the test after a bound.
func spansOnceParentEnded(t *testing.T, exporter *tracetest.InMemoryExporter) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := exporter.GetSpans()
		for _, l := range got {
			if l.Name != "ledger create_ticket" {
				continue
			}
			for _, s := range got {
				if s.SpanContext.SpanID() == l.Parent.SpanID() {
					return got
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans %v: no ledger span with its parent within 10s", names(got))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func names(spans []tracetest.SpanStub) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name + " (" + s.SpanKind.String() + ")"
	}
	return out
}
