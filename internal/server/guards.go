package server

import (
	"context"
	"net/http"
	"strconv"

	"github.com/felixge/httpsnoop"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/observe"
)

// countGuarded returns the handler for a REST route: guards, outermost
// first, in front of api, which counts every request it serves in
// metrics. A request a guard answers itself (a foreign Origin or Host,
// two Authorization headers, a write to a read-only server) never
// reaches api's counter, so it is counted here, as transport rest with
// no route (it matched none yet) and its HTTP status, as api counts its
// own answers.
func countGuarded(metrics *observe.Metrics, api http.Handler, guards ...func(http.Handler) http.Handler) http.Handler {
	reachedAPI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reached, ok := r.Context().Value(reachedKey{}).(*bool); ok {
			*reached = true
		}
		api.ServeHTTP(w, r)
	})
	guarded := chain(reachedAPI, guards...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached := new(bool)
		m := httpsnoop.CaptureMetrics(guarded, w, r.WithContext(context.WithValue(r.Context(), reachedKey{}, reached)))
		if !*reached {
			metrics.Request(observe.REST, "", strconv.Itoa(m.Code), m.Duration)
		}
	})
}

type reachedKey struct{}

// noteMCPRefusal is the Reject of Origin and SingleAuthorization on /mcp:
// WriteError's answer, noted like every refusal of the /mcp edge
// (mcpedge.NoteRefusal), so the chain's refusal counter counts it and the
// access log carries its code.
func noteMCPRefusal(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, message string) {
	mcpedge.NoteRefusal(r, mcpedge.Call{}, code, message)
	WriteError(w, r, status, code, message)
}
