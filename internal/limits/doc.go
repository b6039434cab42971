// Package limits gives every tenant its share of the server: token buckets
// for reads and writes, a cap on a tenant's uploads at once, and the
// budgets every tenant shares, each taken from the tenant's share first:
// request body bytes held at once (Bodies), slots for list pages (Slots),
// and the work in flight (Work), which serves the tenants waiting for it
// in turn. Admission is the one door to the work: work-conserving (a
// tenant alone may use it all), a call waits its turn up to a bound, and
// Outside lets a call that waits on the outside world (a tracker) give
// its slot up meanwhile. A refusal is held for the wait it
// names before it is answered (Tarpit), so a client that retries at once
// cannot spin the CPU every tenant shares. It knows tenants as strings and
// nothing of HTTP or MCP; the transports turn a refusal into rate_limited
// (MCP, with retry_after_ms) or 429 with Retry-After (REST).
//
// Health and readiness probes must never pass through a limiter: the wiring
// mounts them outside it, so an overloaded tenant never makes a replica look
// dead.
package limits
