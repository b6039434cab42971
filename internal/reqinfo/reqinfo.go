// Package reqinfo is what the HTTP edge (internal/server) knows about one
// request and what the handlers behind it add, so the edge can write the one
// access-log line per request: the request ID, the route, the caller and the
// error. It sits below both transports so neither imports the other or the
// edge.
package reqinfo

import "context"

// Header carries the request ID in both directions. The edge sets it on the
// request (the MCP tools' log lines repeat it) and on the response (for the
// caller's bug report).
const Header = "X-Request-ID"

// Info is one request's log annotations. The edge creates it; handlers fill
// in what only they learn. Its methods are nil-safe, so a handler served
// without the edge (a unit test) records nothing and fails nothing.
type Info struct {
	ID      string
	Route   string
	Tenant  string
	Subject string
	Code    string
	Err     error
}

type key struct{}

// With returns a copy of ctx carrying info.
func With(ctx context.Context, info *Info) context.Context {
	return context.WithValue(ctx, key{}, info)
}

// From returns the Info the edge put in ctx, or nil.
func From(ctx context.Context) *Info {
	info, _ := ctx.Value(key{}).(*Info)
	return info
}

// RequestID returns the request's ID, or "" without an Info.
func (i *Info) RequestID() string {
	if i == nil {
		return ""
	}
	return i.ID
}

// SetCaller records who made the request.
func (i *Info) SetCaller(tenant, subject string) {
	if i != nil {
		i.Tenant, i.Subject = tenant, subject
	}
}

// SetRoute records the route pattern that served the request.
func (i *Info) SetRoute(route string) {
	if i != nil {
		i.Route = route
	}
}

// SetError records the contract code of a failed request and its cause
// (which the log shows and the caller may not see).
func (i *Info) SetError(code string, err error) {
	if i != nil {
		i.Code, i.Err = code, err
	}
}
