package observe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// The standard variables that switch tracing on (OpenTelemetry's OTLP
// exporter specification); the exporter reads them, and the rest of the
// OTEL_EXPORTER_OTLP_* family (headers, timeout, TLS), itself.
const (
	EnvOTLPEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTLPTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
)

// Setup installs the global tracer provider when OTEL_EXPORTER_OTLP_ENDPOINT
// or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set: spans are batched and sent
// over OTLP/HTTP with the resource service.name=ticketd (OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES may add to or override it), and W3C trace
// context is propagated. Otherwise it changes nothing and tracing costs
// nothing. It must run before TraceHTTP and TraceGORM are called, which take
// the global provider when they are built.
//
// shutdown flushes the spans still batched; call it once, on the way out,
// with a context bounding how long that may take.
func Setup(ctx context.Context) (shutdown func(context.Context) error, err error) {
	if os.Getenv(EnvOTLPEndpoint) == "" && os.Getenv(EnvOTLPTracesEndpoint) == "" {
		return func(context.Context) error { return nil }, nil
	}
	exporter, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: create OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(semconv.ServiceName("ticketd")),
		resource.WithFromEnv(), // after the default, so the operator's values win
		resource.WithTelemetrySDK(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("tracing: describe the resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(res),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	return func(ctx context.Context) error {
		if err := tp.Shutdown(ctx); err != nil {
			return fmt.Errorf("tracing: flush and shut down: %w", err)
		}
		return nil
	}, nil
}

// untracedPaths are probed every few seconds by orchestrators and scrapers;
// a span for each would bury the requests worth reading.
var untracedPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// untracedProvider is the global tracer provider before anyone sets one:
// it records nothing, and nothing propagates through it.
var untracedProvider = otel.GetTracerProvider()

// TraceHTTP wraps the whole HTTP edge so that every request gets one server
// span, continuing the caller's trace when it sends a traceparent header.
// The span is named after the method; Metrics.Middleware, inside the router,
// renames it after the route pattern once one has matched (a raw path would
// make one span name per ticket). While no tracer provider is set (Setup
// found no endpoint) it returns next itself: otelhttp over the no-op
// provider still wraps the writer and computes each request's attributes,
// about 1.5 KB and a few microseconds a call, for spans nobody records.
func TraceHTTP(next http.Handler) http.Handler {
	if otel.GetTracerProvider() == untracedProvider {
		return next
	}
	return otelhttp.NewHandler(next, "http.request",
		otelhttp.WithFilter(func(r *http.Request) bool { return !untracedPaths[r.URL.Path] }),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return r.Method }),
	)
}
