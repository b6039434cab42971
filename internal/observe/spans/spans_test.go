package spans_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ticketd/ticketd/internal/observe/spans"
)

func TestLedgerJoinsTheCallersTraceAndRecordsItsError(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	_, ledger := spans.Ledger(ctx, "update_ticket")
	spans.End(ledger, errors.New("lock timeout"))
	request.End()

	got := exporter.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans, want the request and its ledger span", len(got))
	}
	l := got[0]
	if l.Name != "ledger update_ticket" || l.Parent.SpanID() != request.SpanContext().SpanID() {
		t.Errorf("span %q under %v, want \"ledger update_ticket\" under the request", l.Name, l.Parent.SpanID())
	}
	if l.Status.Code != codes.Error || l.Status.Description != "lock timeout" {
		t.Errorf("status %+v, want the error", l.Status)
	}
	want := attribute.String("ticketd.action", "update_ticket")
	found := false
	for _, a := range l.Attributes {
		found = found || a == want
	}
	if !found {
		t.Errorf("attributes %v lack %v", l.Attributes, want)
	}
}

func TestLedgerWithoutTracingIsANoOp(t *testing.T) {
	t.Parallel()
	ctx, span := spans.Ledger(context.Background(), "create_ticket")
	if span.IsRecording() || trace.SpanFromContext(ctx).SpanContext().IsValid() {
		t.Error("with no tracer provider installed the ledger started a real span")
	}
	spans.End(span, nil)
}

func TestStatementIsAClientSpanWithoutArguments(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })

	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	_, statement := spans.Statement(ctx, "SELECT", "tickets", "SELECT id FROM tickets WHERE tenant_id = $1")
	spans.End(statement, nil)
	request.End()

	got := exporter.GetSpans()
	if len(got) != 2 {
		t.Fatalf("%d spans, want the request and its statement", len(got))
	}
	s := got[0]
	if s.Name != "SELECT tickets" || s.SpanKind != trace.SpanKindClient || s.Parent.SpanID() != request.SpanContext().SpanID() {
		t.Errorf("span %q (%v) under %v, want the client span \"SELECT tickets\" under the request", s.Name, s.SpanKind, s.Parent.SpanID())
	}
	want := attribute.String("db.query.text", "SELECT id FROM tickets WHERE tenant_id = $1")
	found := false
	for _, a := range s.Attributes {
		found = found || a == want
	}
	if !found {
		t.Errorf("attributes %v lack %v", s.Attributes, want)
	}
}

func TestStatementOutsideATraceStartsNoSpan(t *testing.T) {
	t.Parallel()
	ctx, span := spans.Statement(context.Background(), "SELECT", "tickets", "SELECT 1")
	if span.IsRecording() || trace.SpanFromContext(ctx).SpanContext().IsValid() {
		t.Error("a statement outside any trace started a span")
	}
	spans.End(span, nil)
}
