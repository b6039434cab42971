package rest

import (
	"context"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/errcode"
)

// requestInfo collects what the request log line reports but only inner
// handlers learn: who called and what went wrong. The logging middleware
// owns it; authenticate and fail fill it in through the context.
type requestInfo struct {
	id      string
	tenant  string
	subject string
	code    errcode.Code
	err     error
}

type requestInfoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	info, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	return info
}

// requestID is the ID the log line and a 5xx problem share.
func requestID(r *http.Request) string {
	if info := infoOf(r); info != nil {
		return info.id
	}
	return ""
}

// noteError records the code and cause of a failed request for its log line.
func noteError(r *http.Request, code errcode.Code, err error) {
	if info := infoOf(r); info != nil {
		info.code, info.err = code, err
	}
}

// requestIDHeader carries the request ID both ways, as internal/server
// (which sets it before this router runs) and the MCP transport do.
const requestIDHeader = "X-Request-ID"

// saneRequestID bounds a request ID taken from the request, so a caller
// cannot forge log structure or bloat log lines with it.
var saneRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// logRequests logs one structured line per request, with the caller's tenant
// and the error code when there is one, and turns a panic into a 500
// problem. The request ID is the one on the request when it is sane (so this
// line, the server's access log and the X-Request-ID response header agree),
// else a new one. Headers are never logged: Authorization carries a bearer
// token.
func (a *api) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: r.Header.Get(requestIDHeader)}
		if !saneRequestID.MatchString(info.id) {
			info.id = uuid.NewString()
		}
		w.Header().Set(requestIDHeader, info.id)
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info))
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)

		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.log.ErrorContext(r.Context(), "panic serving request",
					"request_id", info.id, "panic", v, "stack", string(debug.Stack()))
				if ww.Status() == 0 {
					p := newProblem(errcode.Internal, "")
					info.code = p.Code
					a.writeProblem(ww, r, p)
				}
			}
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			attrs := []slog.Attr{
				slog.String("request_id", info.id),
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("route", chi.RouteContext(r.Context()).RoutePattern()),
				slog.Int("status", status),
				slog.Int("bytes", ww.BytesWritten()),
				slog.Duration("duration", time.Since(start)),
			}
			if info.tenant != "" {
				attrs = append(attrs, slog.String("tenant", info.tenant), slog.String("subject", info.subject))
			}
			if info.code != "" {
				attrs = append(attrs, slog.String("code", string(info.code)))
			}
			if info.err != nil {
				attrs = append(attrs, slog.String("error", info.err.Error()))
			}
			level := slog.LevelInfo
			if status >= http.StatusInternalServerError {
				level = slog.LevelError
			}
			a.log.LogAttrs(r.Context(), level, "api request", attrs...)
		}()
		next.ServeHTTP(ww, r)
	})
}
