package server

import (
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/mcptools"
)

// RequestIDHeader carries a request's ID in both directions. The MCP tools
// read it from the request to tie their log lines to the access log, so the
// name is theirs.
const RequestIDHeader = mcptools.RequestIDHeader

// saneRequestID bounds what a caller may choose as request ID, so it cannot
// forge log structure or bloat log lines.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// withRequestID gives every request an ID: the caller's X-Request-ID if it
// is sane, else a new UUID. The ID is set on the request (for handlers and
// logs downstream) and on the response (for the caller's bug report).
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !saneRequestID.MatchString(id) {
			id = uuid.NewString()
		}
		r.Header.Set(RequestIDHeader, id)
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r)
	})
}

// accessLog logs one line per request: method, path, status, size,
// duration, request ID and peer. It logs no headers and no query string, so
// bearer tokens and anything a client put in a URL stay out of the log.
// Probes are logged at debug level so they do not drown real traffic.
func accessLog(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		level := slog.LevelInfo
		if r.URL.Path == HealthPath || r.URL.Path == ReadyPath {
			level = slog.LevelDebug
		}
		logger.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.statusOr200()),
			slog.Int64("bytes", rec.bytes),
			slog.Duration("duration", time.Since(start)),
			slog.String("request_id", r.Header.Get(RequestIDHeader)),
			slog.String("remote_addr", r.RemoteAddr),
		)
	})
}

// limitBody caps every request body at MaxBodyBytes; reading past it fails
// with *http.MaxBytesError, which handlers answer with 413.
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
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
