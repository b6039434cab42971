package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/reqinfo"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// RequestIDHeader carries a request's ID in both directions.
const RequestIDHeader = reqinfo.Header

// chain wraps h in mws, the first outermost.
func chain(h http.Handler, mws ...func(http.Handler) http.Handler) http.Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}

// saneRequestID bounds what a caller may choose as request ID, so it cannot
// forge log structure or bloat log lines.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// withRequestID gives every request an ID and a reqinfo.Info to annotate:
// the caller's X-Request-ID if it is sane, else a new UUID. The ID is set on
// the request (for handlers and logs downstream) and on the response (for
// the caller's bug report).
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		r.Header.Set(RequestIDHeader, id)
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(reqinfo.With(r.Context(), &reqinfo.Info{ID: id})))
	})
}

// accessLog logs one line per request: request ID, method, path, route,
// status, size, duration in milliseconds, peer, and what the handlers noted
// (tenant, subject, error code and cause). It logs no headers and no query
// string, so bearer tokens and anything a client put in a URL stay out of
// the log. Probes are logged at debug level so they do not drown real
// traffic; server faults at error level.
func accessLog(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: w}
			next.ServeHTTP(rec, r)
			info := reqinfo.From(r.Context())
			status := rec.statusOr200()
			attrs := []slog.Attr{
				slog.String("request_id", info.RequestID()),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
			}
			if info != nil && info.Route != "" {
				attrs = append(attrs, slog.String("route", info.Route))
			}
			attrs = append(attrs,
				slog.Int("status", status),
				slog.Int64("bytes", rec.bytes),
				slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
				slog.String("remote_addr", r.RemoteAddr),
			)
			if info != nil && info.Tenant != "" {
				attrs = append(attrs, slog.String("tenant", info.Tenant), slog.String("subject", info.Subject))
			}
			if info != nil && info.Code != "" {
				attrs = append(attrs, slog.String("code", info.Code))
			}
			if info != nil && info.Err != nil {
				attrs = append(attrs, slog.String("error", info.Err.Error()))
			}
			level := slog.LevelInfo
			switch {
			case status >= http.StatusInternalServerError:
				level = slog.LevelError
			case r.URL.Path == HealthPath || r.URL.Path == ReadyPath || r.URL.Path == MetricsPath:
				level = slog.LevelDebug
			}
			logger.LogAttrs(r.Context(), level, "http request", attrs...)
		})
	}
}

// recoverPanics turns a panic in a handler into a 500 internal problem (when
// nothing was sent yet) and a logged stack, so one bad request cannot end
// the process. http.ErrAbortHandler is passed on: it is net/http's way to
// abort a response on purpose.
func recoverPanics(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := &statusRecorder{ResponseWriter: w}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				logger.ErrorContext(context.WithoutCancel(r.Context()), "panic serving request",
					"request_id", reqinfo.From(r.Context()).RequestID(), "panic", v, "stack", string(debug.Stack()))
				if rec.status == 0 {
					rest.WriteError(rec, r, fmt.Errorf("panic: %v", v))
				}
			}()
			next.ServeHTTP(rec, r)
		})
	}
}

// securityHeaders sets the headers every answer should carry: no MIME
// sniffing of JSON, no framing, no referrer leaking request URLs.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}

// limitBody caps every request body at tickets.MaxInputBytes; reading past it fails
// with *http.MaxBytesError, which handlers answer with 413.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, tickets.MaxInputBytes)
		next.ServeHTTP(w, r)
	})
}

// statusRecorder notes the status and size of a response. It unwraps to
// the underlying writer so http.ResponseController can still flush the
// MCP handler's event streams.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(b)
	s.bytes += int64(n)
	return n, err
}

// Flush supports handlers that flush by type assertion rather than through
// http.ResponseController.
func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the underlying writer to http.ResponseController.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) statusOr200() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
