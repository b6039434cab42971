package server

import (
	"cmp"
	"fmt"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Edge is what the edge in front of /mcp and /api/v1 needs beyond the
// public URL. The zero value is the documented defaults.
type Edge struct {
	// AllowedOrigins are origins besides the public URL's that may call
	// (TICKETD_ALLOWED_ORIGINS).
	AllowedOrigins []string
	// AllowedHosts are Host names besides the public URL's host the server
	// answers to (TICKETD_ALLOWED_HOSTS).
	AllowedHosts []string
	// Limits are the per-tenant rate limits and the cap on a tenant's
	// requests reading their body at once; its zero rates turn the buckets
	// off (TICKETD_RATE_LIMIT_*, TICKETD_TENANT_CONCURRENCY).
	Limits limits.Config
	// PoolSize is the size of the service's database connection pool, if
	// known: the work slots sit below it (limits.WorkSlotsFor), so work in
	// flight leaves a connection for everything else.
	PoolSize int
	// ReadOnly serves read tools only and refuses REST writes
	// (TICKETD_READ_ONLY).
	ReadOnly bool
	// Toolsets are the MCP tools served (TICKETD_TOOLSETS); the zero
	// value is mcptools.DefaultToolsets.
	Toolsets mcptools.Toolsets
	// WorkSlots bounds the writes and list pages run at once across all
	// tenants (TICKETD_WORK_SLOTS); limits.WorkSlotsFor(PoolSize) if zero.
	// A tenant alone may take them all; a call that finds none free waits
	// in its tenant's queue, and the queues are served in turn
	// (limits.Admission).
	WorkSlots int
	// AdmissionWait bounds how long a call waits its turn before it is
	// refused (TICKETD_ADMISSION_WAIT); limits.DefaultAdmissionWait if
	// zero.
	AdmissionWait time.Duration
	// TenantQueue bounds the calls of one tenant waiting their turn
	// (TICKETD_TENANT_QUEUE); limits.DefaultTenantQueue if zero.
	TenantQueue int
	// MaxConcurrentPages bounds the list pages built at once across the
	// server, over MCP and REST alike; mcptools.DefaultMaxConcurrentPages if
	// zero.
	MaxConcurrentPages int
	// MaxPagesPerTenant bounds those one tenant builds at once;
	// mcptools.PageShare(MaxConcurrentPages) if zero.
	MaxPagesPerTenant int
	// BodyBudget bounds the request body bytes held at once across all
	// requests; DefaultBodyBudget if zero. One tenant may hold a quarter
	// of it (BodyShareOf).
	BodyBudget int64
}

// DefaultBodyBudget bounds the body bytes all requests hold at once: 64
// bodies of the largest size. Bytes are counted as they arrive, so stalled
// uploads hold what they sent, and one tenant holds at most its share.
const DefaultBodyBudget = 64 * tickets.MaxInputBytes

// BodyShareOf is one tenant's share of a body budget: a quarter, so a
// tenant's stalled uploads (16 bodies of the largest size by default) leave
// three quarters to the others, and only several tenants together can spend
// the budget.
func BodyShareOf(budget int64) int64 { return max(tickets.MaxInputBytes, budget/4) }

// guards are the generic guards New builds from Edge once: the tenants'
// limits and the body budget every route shares, and the Origin and Host
// checks in each route's own reply format.
type guards struct {
	tenants   *limits.Tenants
	budget    *limits.Bodies
	admission *limits.Admission
	// origin writes its 403 as a JSON error (the MCP endpoint's),
	// apiOrigin as a problem document.
	origin, apiOrigin        func(http.Handler) http.Handler
	consoleHost, metricsHost func(http.Handler) http.Handler
}

func newGuards(e Edge, public string) (*guards, error) {
	g := &guards{}
	var err error
	if g.tenants, err = limits.New(e.Limits); err != nil {
		return nil, fmt.Errorf("server: tenant limits: %w", err)
	}
	if g.admission, err = mcptools.NewAdmission(mcptools.AdmissionSettings{
		WorkSlots: e.WorkSlots, PoolSize: e.PoolSize, TenantQueue: e.TenantQueue,
		MaxPages: e.MaxConcurrentPages, MaxPagesPerTenant: e.MaxPagesPerTenant, Wait: e.AdmissionWait,
	}); err != nil {
		return nil, fmt.Errorf("server: admission: %w", err)
	}
	bodyBudget := cmp.Or(e.BodyBudget, DefaultBodyBudget)
	if g.budget, err = limits.NewBodies(bodyBudget, min(bodyBudget, BodyShareOf(bodyBudget)), min(bodyBudget, tickets.MaxInputBytes)); err != nil {
		return nil, fmt.Errorf("server: body budget: %w", err)
	}
	opts := OriginOptions{PublicURL: public, AllowedOrigins: e.AllowedOrigins, AllowedHosts: e.AllowedHosts, Reject: noteMCPRefusal}
	if g.origin, err = Origin(opts); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	opts.Reject = rest.Reject
	if g.apiOrigin, err = Origin(opts); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	hostOpts := OriginOptions{PublicURL: public, AllowedHosts: e.AllowedHosts}
	if g.consoleHost, err = Host(hostOpts); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	hostOpts.AnyAddress = true
	if g.metricsHost, err = Host(hostOpts); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return g, nil
}

// api is /api/v1: Origin (problem-document replies), one Authorization
// header, on a read-only server refuseWrites, then the REST router, which
// authenticates and then draws from the tenant's bucket, reads the body
// under the tenant's upload bounds and, for writes and list pages, admits
// the request to the server's work (AfterAuth), as on /mcp.
func (w *wiring) api() http.Handler {
	restTenant := func(r *http.Request) (string, bool) {
		p, ok := authn.PrincipalFromContext(r.Context())
		return p.Tenant, ok
	}
	restAPI := rest.NewRouter(rest.Config{
		Service: w.cfg.Service, Verifier: w.cfg.Verifier, ResourceMetadataURL: w.metadataURL,
		ChallengeScopes: w.scopes, Metrics: w.metrics, Webhooks: w.cfg.Webhooks,
		AfterAuth: []func(http.Handler) http.Handler{
			Limit(LimitOptions{Limits: w.guards.tenants, Tenant: restTenant, Reject: rest.Reject}),
			Bodies(BodiesOptions{Budget: w.guards.budget, Uploads: w.guards.tenants, Tenant: restTenant, MaxBytes: tickets.MaxInputBytes, Reject: rest.Reject}),
			ShareWork(ShareWorkOptions{Admission: w.guards.admission, Tenant: restTenant, Hold: w.guards.tenants.Hold, Reject: rest.Reject}),
		},
	})
	steps := []func(http.Handler) http.Handler{w.guards.apiOrigin, SingleAuthorization(rest.Reject)}
	if w.cfg.Edge.ReadOnly {
		steps = append(steps, refuseWrites)
	}
	return countGuarded(w.metrics, restAPI, steps...)
}

// refuseWrites answers every REST request but GET, HEAD and OPTIONS with 403
// on a read-only server (--read-only).
func refuseWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		rest.Reject(w, r, http.StatusForbidden, errcode.Forbidden, "this server is read-only (TICKETD_READ_ONLY): it refuses every write")
	})
}
