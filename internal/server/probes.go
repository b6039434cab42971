package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/internal/limits"
)

// readyTimeout bounds a readiness check, so a hung database makes /readyz
// answer 503 rather than hang the prober.
const readyTimeout = 2 * time.Second

func health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// ready answers 200 while check passes and 503 while it fails, or while a
// budget every tenant shares has been exhausted for longer than a call may
// wait for it: the body budget, which no call waits for, as soon as it is
// spent (one tenant alone cannot spend it), and the work slots once every
// one has been taken, since a call found none free, for longer than the
// admission wait (limits.Admission.Exhausted), so a load balancer sends new
// requests to a replica that can take them, and not for a burst the queues
// absorb. The
// cause is logged, not shown: probes need the status, and the error may
// describe the database.
func ready(check func(context.Context) error, bodies *limits.Bodies, admission *limits.Admission, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		spent := ""
		switch {
		case bodies.Spent():
			spent = "the request body budget is spent"
		case admission.Exhausted():
			spent = "every work slot has been taken, with calls waiting, for longer than TICKETD_ADMISSION_WAIT"
		}
		if spent != "" {
			logger.WarnContext(r.Context(), "not ready: "+spent, "request_id", r.Header.Get(RequestIDHeader))
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "busy"})
			return
		}
		if check != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := check(ctx); err != nil {
				logger.WarnContext(r.Context(), "not ready", "error", err, "request_id", r.Header.Get(RequestIDHeader))
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a failed write has no one left to tell
}
