package observe_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/observe/spans"
)

// The tests below replace the process's global tracer provider, so they do
// not run in parallel; every parallel test of the package starts after them.

func TestSpanTreeRequestLedgerSQL(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})

	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		if err := observe.TraceGORM(d.Gorm); err != nil {
			t.Fatal(err)
		}
		const secret = "a title that must not reach the tracing backend"
		m := observe.New(observe.Options{})
		r := chi.NewRouter()
		r.Use(m.Middleware(observe.REST))
		r.Post("/api/v1/projects/{id}", func(w http.ResponseWriter, req *http.Request) {
			ctx, span := spans.Ledger(req.Context(), "create_project")
			err := d.Gorm.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				var n int64
				if err := tx.Table("projects").Where("tenant_id = ?", "t1").Count(&n).Error; err != nil {
					return err
				}
				return tx.Exec("INSERT INTO projects (tenant_id, id, key, name, created_at) VALUES (?, ?, ?, ?, ?)",
					"t1", chi.URLParam(req, "id"), "SUP", secret, time.Now().UTC()).Error
			})
			spans.End(span, err)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.WriteHeader(http.StatusCreated)
		})
		handler := observe.TraceHTTP(r)

		// The caller's own span, sent as traceparent: the request joins its trace.
		callerCtx, caller := tp.Tracer("test").Start(context.Background(), "agent call")
		req := httptest.NewRequest(http.MethodPost, "/api/v1/projects/p1", nil)
		otel.GetTextMapPropagator().Inject(callerCtx, propagation.HeaderCarrier(req.Header))
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		caller.End()
		if rec.Code != http.StatusCreated {
			t.Fatalf("POST = %d: %s", rec.Code, rec.Body)
		}

		var inTrace []tracetest.SpanStub
		for _, s := range exporter.GetSpans() {
			if s.SpanContext.TraceID() == caller.SpanContext().TraceID() {
				inTrace = append(inTrace, s)
			}
		}
		server := only(t, inTrace, func(s tracetest.SpanStub) bool { return s.SpanKind == trace.SpanKindServer })
		if server.Name != "POST /api/v1/projects/{id}" || server.Parent.SpanID() != caller.SpanContext().SpanID() {
			t.Errorf("request span %q under %v, want \"POST /api/v1/projects/{id}\" under the caller's span", server.Name, server.Parent.SpanID())
		}
		ledger := only(t, inTrace, func(s tracetest.SpanStub) bool { return s.Name == "ledger create_project" })
		if ledger.Parent.SpanID() != server.SpanContext.SpanID() {
			t.Error("the ledger span is not a child of the request span")
		}
		var statements []string
		for _, s := range inTrace {
			if s.SpanKind != trace.SpanKindClient {
				continue
			}
			if s.Parent.SpanID() != ledger.SpanContext.SpanID() {
				t.Errorf("SQL span %q is not a child of the ledger span", s.Name)
			}
			statements = append(statements, s.Name)
			for _, a := range s.Attributes {
				if strings.Contains(a.Value.String(), secret) {
					t.Errorf("SQL span %q attribute %s carries a statement argument", s.Name, a.Key)
				}
			}
		}
		if got := strings.Join(statements, ", "); got != "SELECT projects, INSERT" {
			t.Errorf("SQL spans = %q, want the count and the insert, in order", got)
		}
	})
}

func TestSQLSpans(t *testing.T) {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	otel.SetTracerProvider(tp)
	d := dbtest.SQLite(t)
	if err := observe.TraceGORM(d.Gorm); err != nil {
		t.Fatal(err)
	}

	t.Run("OutsideATraceStartNoRootSpan", func(t *testing.T) {
		exporter.Reset()
		if err := d.Gorm.WithContext(context.Background()).Exec("SELECT 1").Error; err != nil {
			t.Fatal(err)
		}
		if spans := exporter.GetSpans(); len(spans) != 0 {
			t.Errorf("a statement outside any trace made %d spans", len(spans))
		}
	})
	t.Run("AFailedStatementMarksItsSpan", func(t *testing.T) {
		exporter.Reset()
		ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
		err := d.Gorm.WithContext(ctx).Exec("SELECT * FROM no_such_table").Error
		parent.End()
		if err == nil {
			t.Fatal("a query of a missing table succeeded")
		}
		sql := only(t, exporter.GetSpans(), func(s tracetest.SpanStub) bool { return s.SpanKind == trace.SpanKindClient })
		if sql.Status.Code != otelcodes.Error || sql.Parent.SpanID() != parent.SpanContext().SpanID() || sql.Name != "SELECT" {
			t.Errorf("SQL span %q status %v under %v, want an error SELECT under the caller", sql.Name, sql.Status, sql.Parent.SpanID())
		}
	})
}

// only returns the one span matching keep, failing the test otherwise.
func only(tb testing.TB, spans []tracetest.SpanStub, keep func(tracetest.SpanStub) bool) tracetest.SpanStub {
	tb.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if keep(s) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		names := make([]string, len(spans))
		for i, s := range spans {
			names[i] = s.Name
		}
		tb.Fatalf("%d matching spans among %v, want 1", len(found), names)
	}
	return found[0]
}

func TestSetupWithoutEndpointChangesNothing(t *testing.T) {
	t.Setenv(observe.EnvOTLPEndpoint, "")
	t.Setenv(observe.EnvOTLPTracesEndpoint, "")
	before := otel.GetTracerProvider()
	shutdown, err := observe.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if otel.GetTracerProvider() != before {
		t.Error("Setup installed a tracer provider with no endpoint configured")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestSetupExportsOverOTLPHTTP(t *testing.T) {
	received := make(chan *collectortrace.ExportTraceServiceRequest, 16)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		export := &collectortrace.ExportTraceServiceRequest{}
		if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(body, export) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		received <- export
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	t.Setenv(observe.EnvOTLPEndpoint, collector.URL)
	t.Setenv(observe.EnvOTLPTracesEndpoint, "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")

	shutdown, err := observe.Setup(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, span := otel.Tracer("test").Start(context.Background(), "probe")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil { // flushes the batch
		t.Fatal(err)
	}
	close(received)

	var service string
	var names []string
	for export := range received {
		for _, rs := range export.GetResourceSpans() {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.GetKey() == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	if service != "ticketd" || strings.Join(names, ",") != "probe" {
		t.Errorf("collector got spans %v from service %q, want [probe] from ticketd", names, service)
	}
}
