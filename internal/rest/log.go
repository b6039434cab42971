package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// The HTTP edge (internal/server) writes the one log line per request; the
// router only adds what it alone learns: the route, the caller (in
// authenticate) and the error.

// noteRoute records the chi route pattern that served the request, once
// routing is done.
func noteRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r)
		if rc := chi.RouteContext(r.Context()); rc != nil {
			reqinfo.From(r.Context()).SetRoute(rc.RoutePattern())
		}
	})
}

// noteError records the code and cause of a failed request for its log line.
func noteError(r *http.Request, code errcode.Code, err error) {
	reqinfo.From(r.Context()).SetError(string(code), err)
}

// requestID is the ID the log line and a 5xx problem share.
func requestID(r *http.Request) string {
	return reqinfo.From(r.Context()).RequestID()
}
