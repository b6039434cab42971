// Package spans starts the spans ticketd's own layers add to a trace (the
// ledger run of a write). It depends on the OpenTelemetry API alone, so the
// domain packages can use it without importing a transport, a router or a
// metrics library; with no tracer provider installed every call is a no-op.
package spans

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Instrumentation names the tracer of the spans ticketd starts itself.
const Instrumentation = "github.com/ticketd/ticketd"

// Ledger starts the span of one ledger run for action (e.g. create_ticket)
// under the span in ctx; the statements run with the returned context become
// its children. End it with End.
func Ledger(ctx context.Context, action string) (context.Context, trace.Span) {
	return tracer(ctx).Start(ctx, "ledger "+action,
		trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("ticketd.action", action)),
	)
}

// Statement starts the span of one PostgreSQL statement ticketd sends
// without GORM (observe.TraceGORM traces GORM's), as that plugin names and
// describes its own: a client span "<operation> <table>" under the span in
// ctx, carrying the statement's text with its placeholders, never its
// arguments. Outside a recording span it starts none, as that plugin does
// not, and returns ctx with a span whose End does nothing.
func Statement(ctx context.Context, operation, table, query string) (context.Context, trace.Span) {
	if !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return tracer(ctx).Start(ctx, operation+" "+table,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.DBSystemNamePostgreSQL, semconv.DBQueryText(query),
			semconv.DBOperationName(operation), semconv.DBCollectionName(table)),
	)
}

// End ends span, marking it failed with err when err is not nil.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// tracer takes the provider of the span in ctx, so a ledger span always
// joins its request's trace; with no span (stdio) it falls back to the
// global provider.
func tracer(ctx context.Context) trace.Tracer {
	if span := trace.SpanFromContext(ctx); span.SpanContext().IsValid() {
		return span.TracerProvider().Tracer(Instrumentation)
	}
	return otel.Tracer(Instrumentation)
}
