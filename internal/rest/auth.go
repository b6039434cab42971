package rest

import (
	"net/http"
	"strings"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/reqinfo"
	"github.com/ticketd/ticketd/internal/tickets"
)

// authenticate admits requests that carry a valid bearer token and puts the
// principal in the context. It answers 401 itself, as a problem document, so
// every refusal an operator sees has the same shape; a valid token that
// grants no ticketd scope at all gets 403 insufficient_scope, as on /mcp.
// Config.AfterAuth runs after it. The token is used for this request only:
// it is never logged and never passed on.
func (a *api) authenticate(next http.Handler) http.Handler {
	for i := len(a.afterAuth) - 1; i >= 0; i-- {
		next = a.afterAuth[i](next)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := authn.BearerToken(r.Header.Get("Authorization"))
		if !ok {
			a.unauthenticated(w, r, nil, "", "A bearer token is required: send Authorization: Bearer <token>.")
			return
		}
		p, err := a.verifier.Verify(r.Context(), raw)
		if err != nil {
			// Verify's reasons never quote the token, so they are safe to show.
			a.unauthenticated(w, r, err, `error="invalid_token"`, "The bearer token was rejected: "+err.Error()+".")
			return
		}
		reqinfo.From(r.Context()).SetCaller(p.Tenant, p.Subject)
		if !p.HasScope(authn.ScopeRead) && !p.HasScope(authn.ScopeWrite) && !p.HasScope(authn.ScopeApprove) {
			w.Header().Set("WWW-Authenticate", a.challenge(`error="insufficient_scope"`, a.scopeParam()))
			pr := newProblem(errcode.Forbidden, "This token grants no ticketd scope (tickets:read, tickets:write, tickets:approve or tickets:admin).")
			noteError(r, pr.Code, nil)
			writeProblem(w, r, pr)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r.WithContext(authn.ContextWithPrincipal(r.Context(), p)))
	})
}

// unauthenticated answers 401 with the WWW-Authenticate challenge that tells
// an OAuth client where the Protected Resource Metadata is (RFC 9728 §5.1).
// cause, the verifier's reason, goes to the log line only.
func (a *api) unauthenticated(w http.ResponseWriter, r *http.Request, cause error, errorParam, detail string) {
	w.Header().Set("WWW-Authenticate", a.challenge(errorParam, a.scopeParam()))
	p := newProblem(errcode.Unauthenticated, detail)
	noteError(r, p.Code, cause)
	writeProblem(w, r, p)
}

// scopeParam is the scope auth-param naming ChallengeScopes, or "".
func (a *api) scopeParam() string {
	if len(a.challengeScopes) == 0 {
		return ""
	}
	return `scope="` + strings.Join(a.challengeScopes, " ") + `"`
}

// Reject answers a refusal made in front of the API (the HTTP edge's Origin,
// body budget and tenant limits) as a problem document with the contract
// code, so a REST caller meets one error shape whatever refused it. A
// Retry-After the caller already set is kept.
func Reject(w http.ResponseWriter, r *http.Request, status int, code errcode.Code, message string) {
	p := newProblem(code, message)
	p.Status = status
	if w.Header().Get("Retry-After") != "" {
		p.retryAfter = 0
	}
	noteError(r, p.Code, nil)
	writeProblem(w, r, p)
}

// challenge builds a Bearer challenge with the resource metadata URL and any
// extra auth-params.
func (a *api) challenge(params ...string) string {
	var parts []string
	if a.resourceMetadataURL != "" {
		parts = append(parts, `resource_metadata="`+a.resourceMetadataURL+`"`)
	}
	for _, p := range params {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return "Bearer"
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// require refuses, with 403, principals that lack scope. The scope is checked
// before the service runs, so a refused write writes nothing; the resource is
// never consulted, so a 403 says nothing about another tenant's data.
func (a *api) require(scope string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !principal(r).HasScope(scope) {
				w.Header().Set("WWW-Authenticate", a.challenge(`error="insufficient_scope"`, `scope="`+scope+`"`))
				p := newProblem(errcode.Forbidden, "This request needs the "+scope+" scope, which your token does not grant.")
				noteError(r, p.Code, nil)
				writeProblem(w, r, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// principal returns the caller authenticate admitted. Handlers run only
// behind authenticate, so the zero Principal (no tenant, no scopes) is what a
// routing mistake would see: it grants nothing and matches no data.
func principal(r *http.Request) authn.Principal {
	p, _ := authn.PrincipalFromContext(r.Context())
	return p
}

// caller is who the service acts for: the principal's tenant and subject.
func caller(r *http.Request) tickets.Caller {
	p := principal(r)
	return tickets.Caller{Tenant: p.Tenant, Subject: p.Subject}
}
