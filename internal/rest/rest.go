// Package rest is ticketd's operator API: JSON over HTTP under /api/v1, with
// errors as RFC 9457 problem documents. It is a thin transport over
// tickets.Service, the same one the MCP tools call, so a ticket created here
// with an Idempotency-Key and one created over MCP with the same operation_id
// and intent are the same operation.
//
// Every problem document's type is https://ticketd.dev/problems/<code>, where
// <code> is the contract error code (docs/contract.md#error-codes) also given in the code member;
// requests refused for their shape (wrong method, media type or size) carry
// code invalid_input with the more precise HTTP status.
package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// Config wires the router to its dependencies.
type Config struct {
	// Service answers every request; required.
	Service *tickets.Service
	// Verifier checks bearer tokens; required.
	Verifier *authn.Verifier
	// ResourceMetadataURL is the Protected Resource Metadata (RFC 9728) URL
	// advertised in WWW-Authenticate, so a client can find the authorisation
	// server after a 401. Empty leaves the parameter out.
	ResourceMetadataURL string
	// Metrics counts and times every request by route pattern and status;
	// nil counts nothing.
	Metrics *observe.Metrics
	// ChallengeScopes are named in every 401 challenge (scope="…"), so an
	// OAuth client knows what to ask for. Empty leaves the parameter out.
	ChallengeScopes []string
	// AfterAuth wraps every authenticated route, after the token is
	// verified and the principal is in the context: the HTTP edge's
	// per-tenant limits go here.
	AfterAuth []func(http.Handler) http.Handler
	// Webhooks serves /api/v1/webhooks; nil leaves those routes out.
	Webhooks *webhooks.Service
}

// api is the state the handlers share.
type api struct {
	svc                 *tickets.Service
	verifier            *authn.Verifier
	resourceMetadataURL string
	metrics             *observe.Metrics
	challengeScopes     []string
	afterAuth           []func(http.Handler) http.Handler
	hooks               *webhooks.Service
	mux                 *chi.Mux // the root router, asked which methods a path allows
}

// NewRouter returns the handler for the full /api/v1/... paths, to be mounted
// as-is (mux.Handle("/api/v1/", h)) behind the HTTP edge of internal/server,
// which assigns request IDs, logs, recovers panics and bounds bodies. It
// panics on a Config without Service or
// Verifier, because that is a wiring bug no request could recover from.
func NewRouter(cfg Config) http.Handler {
	if cfg.Service == nil || cfg.Verifier == nil {
		panic("rest.NewRouter: Config.Service and Config.Verifier are required")
	}
	a := &api{
		svc:                 cfg.Service,
		verifier:            cfg.Verifier,
		resourceMetadataURL: cfg.ResourceMetadataURL,
		metrics:             cfg.Metrics,
		challengeScopes:     cfg.ChallengeScopes,
		afterAuth:           cfg.AfterAuth,
		hooks:               cfg.Webhooks,
	}
	return a.routes()
}
