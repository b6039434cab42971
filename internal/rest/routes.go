package rest

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/observe"
)

// routes is the whole API surface in one place. openapi.json describes the
// same routes, and TestOpenAPIMatchesRoutes keeps the two in step.
func (a *api) routes() http.Handler {
	doc, err := openAPIDocument()
	if err != nil {
		// The embedded document is part of the build: every test sees this.
		panic("rest: " + err.Error())
	}
	r := chi.NewRouter()
	a.mux = r
	if a.metrics != nil {
		// First, so it times everything after it and reads the route
		// pattern once the handler has matched one.
		r.Use(a.metrics.Middleware(observe.REST))
	}
	r.Use(noteRoute)
	r.NotFound(a.notFound)
	r.MethodNotAllowed(a.methodNotAllowed)

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/openapi.json", serveOpenAPI(doc))

		r.Group(func(r chi.Router) {
			r.Use(a.authenticate)

			r.With(a.require(authn.ScopeRead)).Get("/projects", a.listProjects)
			r.With(a.require(authn.ScopeAdmin)).Post("/projects", a.createProject)

			r.With(a.require(authn.ScopeRead)).Get("/tickets", a.listTickets)
			r.With(a.require(authn.ScopeWrite)).Post("/tickets", a.createTicket)
			r.With(a.require(authn.ScopeWrite)).Post("/tickets/bulk", a.bulkUpdateTickets)
			r.With(a.require(authn.ScopeRead)).Get("/tickets/{id_or_key}", a.getTicket)
			r.With(a.require(authn.ScopeWrite)).Patch("/tickets/{id_or_key}", a.updateTicket)
			r.With(a.require(authn.ScopeRead)).Get("/tickets/{id_or_key}/comments", a.listComments)
			r.With(a.require(authn.ScopeWrite)).Post("/tickets/{id_or_key}/comments", a.addComment)
			r.With(a.require(authn.ScopeRead)).Get("/tickets/{id_or_key}/events", a.listEvents)
			r.With(a.require(authn.ScopeRead)).Get("/tickets/{id_or_key}/links", a.listLinks)
			r.With(a.require(authn.ScopeWrite)).Post("/tickets/{id_or_key}/links", a.linkTickets)

			r.With(a.require(authn.ScopeRead)).Get("/users", a.listUsers)
			r.With(a.require(authn.ScopeAdmin)).Post("/users", a.createUser)
			r.With(a.require(authn.ScopeAdmin)).Patch("/users/{user_id}", a.updateUser)

			r.With(a.require(authn.ScopeRead)).Get("/operations", a.listOperations)
			r.With(a.require(authn.ScopeRead)).Get("/operations/{operation_id}", a.getOperation)
			r.With(a.require(authn.ScopeAdmin)).Post("/operations/{operation_id}/reconcile", a.reconcileOperation)
			r.With(a.require(authn.ScopeAdmin)).Post("/operations/{operation_id}/resolve", a.resolveOperation)

			// A person's decision: tickets:approve alone, which agents'
			// tokens never carry (docs/approval.md).
			r.With(a.require(authn.ScopeApprove)).Post("/approvals/{approval_id}/approve", a.approveApproval)
			r.With(a.require(authn.ScopeApprove)).Post("/approvals/{approval_id}/decline", a.declineApproval)

			if a.hooks != nil {
				r.Group(func(r chi.Router) {
					r.Use(a.require(authn.ScopeAdmin))
					r.Post("/webhooks", a.createWebhook)
					r.Get("/webhooks", a.listWebhooks)
					r.Get("/webhooks/{webhook_id}", a.getWebhook)
					r.Delete("/webhooks/{webhook_id}", a.deleteWebhook)
					r.Get("/webhooks/{webhook_id}/deliveries", a.listWebhookDeliveries)
					r.Post("/webhooks/{webhook_id}/deliveries/{delivery_id}/retry", a.retryWebhookDelivery)
				})
			}
		})
	})
	return r
}
