package observe

import (
	"net/http"
	"strconv"

	"github.com/felixge/httpsnoop"
	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Middleware counts and times every request it wraps as transport, labelled
// with the chi route pattern that matched and the HTTP status. It must be
// installed inside a chi router (Router.Use), where the route context is
// set; the pattern is read after the handler ran, when sub-routers have
// completed it. It also names the request's span after the pattern, so
// traces group by route as metrics do.
func (m *Metrics) Middleware(transport Transport) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			stats := httpsnoop.CaptureMetrics(next, w, r)
			route := routePattern(r)
			m.Request(transport, route, statusText(stats.Code), stats.Duration)
			if span := trace.SpanFromContext(r.Context()); span.IsRecording() && route != "" {
				span.SetName(r.Method + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
		})
	}
}

func routePattern(r *http.Request) string {
	if rc := chi.RouteContext(r.Context()); rc != nil {
		return rc.RoutePattern()
	}
	return ""
}

// statusTexts holds the label values of the valid HTTP statuses, so the
// hot path does not format an integer.
var statusTexts = func() (t [600]string) {
	for code := 100; code < len(t); code++ {
		t[code] = strconv.Itoa(code)
	}
	return t
}()

func statusText(code int) string {
	if code < 100 || code >= len(statusTexts) {
		return Other
	}
	return statusTexts[code]
}
