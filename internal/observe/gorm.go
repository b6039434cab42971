package observe

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/observe/spans"
)

// TraceGORM registers a GORM plugin on g that makes every statement run
// under a recording span (g.WithContext(ctx) with a request or ledger span)
// a child span of it. Statements outside any trace (background polling)
// start no root span of their own. A span records the SQL text with its
// placeholders, never the arguments: ticket titles and descriptions stay out
// of the tracing backend. Call it once per *gorm.DB, after Setup.
//
// ticketd carries this small plugin rather than gorm.io/plugin/opentelemetry
// because that one links the MySQL and ClickHouse drivers (33 packages) into
// every binary and records arguments unless told not to.
func TraceGORM(g *gorm.DB) error {
	if err := g.Use(&gormTracing{tracer: otel.Tracer(spans.Instrumentation)}); err != nil {
		return fmt.Errorf("tracing: register the GORM plugin: %w", err)
	}
	return nil
}

type gormTracing struct {
	tracer trace.Tracer
}

func (*gormTracing) Name() string { return "ticketd:tracing" }

// Initialize hooks every kind of statement GORM runs, around GORM's own
// callback for it.
func (p *gormTracing) Initialize(g *gorm.DB) error {
	cb := g.Callback()
	hooks := []struct {
		kind     string
		before   func(string, func(*gorm.DB)) error
		after    func(string, func(*gorm.DB)) error
		callback string
	}{
		{"create", cb.Create().Before("gorm:create").Register, cb.Create().After("gorm:create").Register, "gorm:create"},
		{"query", cb.Query().Before("gorm:query").Register, cb.Query().After("gorm:query").Register, "gorm:query"},
		{"update", cb.Update().Before("gorm:update").Register, cb.Update().After("gorm:update").Register, "gorm:update"},
		{"delete", cb.Delete().Before("gorm:delete").Register, cb.Delete().After("gorm:delete").Register, "gorm:delete"},
		{"row", cb.Row().Before("gorm:row").Register, cb.Row().After("gorm:row").Register, "gorm:row"},
		{"raw", cb.Raw().Before("gorm:raw").Register, cb.Raw().After("gorm:raw").Register, "gorm:raw"},
	}
	for _, h := range hooks {
		if err := h.before("ticketd:trace_before_"+h.kind, p.before(h.kind)); err != nil {
			return fmt.Errorf("register before %s: %w", h.callback, err)
		}
		if err := h.after("ticketd:trace_after_"+h.kind, p.after); err != nil {
			return fmt.Errorf("register after %s: %w", h.callback, err)
		}
	}
	return nil
}

// spanContext is the statement's context while its span is open; it
// remembers the caller's context so that after the statement the *gorm.DB
// (which a caller may reuse for the next statement) is a sibling's parent,
// not this span's.
type spanContext struct {
	context.Context
	parent context.Context
	span   trace.Span
}

func (p *gormTracing) before(kind string) func(*gorm.DB) {
	name := "gorm." + kind
	return func(tx *gorm.DB) {
		parent := tx.Statement.Context
		if parent == nil || !trace.SpanFromContext(parent).IsRecording() {
			return
		}
		ctx, span := p.tracer.Start(parent, name, trace.WithSpanKind(trace.SpanKindClient))
		tx.Statement.Context = spanContext{Context: ctx, parent: parent, span: span}
	}
}

func (p *gormTracing) after(tx *gorm.DB) {
	sc, ok := tx.Statement.Context.(spanContext)
	if !ok {
		return
	}
	tx.Statement.Context = sc.parent
	span := sc.span
	defer span.End()

	query := tx.Statement.SQL.String()
	attrs := make([]attribute.KeyValue, 0, 5)
	switch tx.Dialector.Name() {
	case "postgres":
		attrs = append(attrs, semconv.DBSystemNamePostgreSQL)
	case "sqlite":
		attrs = append(attrs, semconv.DBSystemNameSQLite)
	}
	attrs = append(attrs, semconv.DBQueryText(query))
	if op := firstWord(query); op != "" {
		attrs = append(attrs, semconv.DBOperationName(op))
		if table := tx.Statement.Table; table != "" {
			attrs = append(attrs, semconv.DBCollectionName(table))
			span.SetName(op + " " + table)
		} else {
			span.SetName(op)
		}
	}
	if tx.Statement.RowsAffected >= 0 {
		attrs = append(attrs, attribute.Int64("db.rows_affected", tx.Statement.RowsAffected))
	}
	span.SetAttributes(attrs...)
	if err := tx.Error; err != nil && !errors.Is(err, gorm.ErrRecordNotFound) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// firstWord is the statement's verb (SELECT, INSERT, WITH, …), for a span
// name that groups statements of one kind.
func firstWord(query string) string {
	fields := strings.Fields(strings.TrimLeft(query, "( \t\r\n"))
	if len(fields) == 0 {
		return ""
	}
	return strings.ToUpper(fields[0])
}
