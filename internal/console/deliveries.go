package console

import (
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/webhooks"
)

// maxFailedShown bounds the deliveries read per webhook for the page; the
// newest come first, so the page shows the recent failures.
const maxFailedShown = 100

// failedDelivery is one row of the failed-deliveries page.
type failedDelivery struct {
	Webhook  webhooks.Subscription
	Delivery webhooks.Delivery
}

// deliveriesPage lists the tenant's failed webhook deliveries, newest first
// per webhook, each with a retry button.
func (c *console) deliveriesPage(w http.ResponseWriter, r *http.Request, req *request) {
	tenant := req.principal.Tenant
	subs, err := c.hooks.ListSubscriptions(r.Context(), tenant)
	if err != nil {
		c.failErr(w, r, req, err)
		return
	}
	var failed []failedDelivery
	for _, sub := range subs {
		ds, err := c.hooks.Deliveries(r.Context(), tenant, sub.ID, maxFailedShown)
		if err != nil {
			c.failErr(w, r, req, err)
			return
		}
		for _, d := range ds {
			if d.Status == webhooks.StatusFailed {
				failed = append(failed, failedDelivery{Webhook: sub, Delivery: d})
			}
		}
	}
	notice := ""
	if r.URL.Query().Get("done") == "retried" {
		notice = "Delivery queued again with the same webhook-id; a receiver that deduplicates acts at most once."
	}
	c.render(w, r, req, http.StatusOK, "deliveries", layout{Title: "Failed deliveries", Nav: deliveriesNav.Path, Notice: notice}, failed)
}

// retryDelivery sends a failed delivery again (the REST retry's form).
func (c *console) retryDelivery(w http.ResponseWriter, r *http.Request, req *request) {
	sub, err := uuid.Parse(r.PathValue("webhook"))
	if err != nil {
		c.failErr(w, r, req, fmt.Errorf("%w: webhook %q is not a UUID", webhooks.ErrInvalid, r.PathValue("webhook")))
		return
	}
	del, err := uuid.Parse(r.PathValue("delivery"))
	if err != nil {
		c.failErr(w, r, req, fmt.Errorf("%w: delivery %q is not a UUID", webhooks.ErrInvalid, r.PathValue("delivery")))
		return
	}
	if _, err := c.hooks.Retry(r.Context(), req.principal.Tenant, sub, del); err != nil {
		c.failErr(w, r, req, err)
		return
	}
	http.Redirect(w, r, deliveriesNav.Path+"?done=retried", http.StatusSeeOther)
}
