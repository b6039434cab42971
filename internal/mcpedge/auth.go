package mcpedge

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/reqinfo"
)

// scopeParam is the scope auth-param of a challenge naming scopes.
func scopeParam(scopes []string) string { return fmt.Sprintf("scope=%q", strings.Join(scopes, " ")) }

// scopedChallenge completes the 401 challenge auth.RequireBearerToken
// writes, which has no option for either: scope="…" names the scopes to ask
// for (every tool's, or the read scope on a read-only server), a hint, not
// a requirement, so an OAuth client asks for them on its first
// authorization; and a request that presented a token the verifier
// rejected gets error="invalid_token" (RFC 6750 §3.1), which tells a client
// to get a new token rather than to sign in for the first time.
func scopedChallenge(scopes []string) func(http.Handler) http.Handler {
	param := scopeParam(scopes)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(&challengeWriter{ResponseWriter: w, scope: param, presented: r.Header.Get("Authorization") != ""}, r)
		})
	}
}

type challengeWriter struct {
	http.ResponseWriter
	scope     string
	presented bool
}

func (c *challengeWriter) WriteHeader(status int) {
	h := c.ResponseWriter.Header()
	if v := h.Get("WWW-Authenticate"); status == http.StatusUnauthorized && !strings.Contains(v, "scope=") {
		params := []string{}
		if c.presented && !strings.Contains(v, "error=") {
			params = append(params, `error="invalid_token"`)
		}
		params = append(params, c.scope)
		if rest := strings.TrimSpace(strings.TrimPrefix(v, "Bearer")); rest != "" {
			params = append(params, rest)
		}
		h.Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	}
	c.ResponseWriter.WriteHeader(status)
}

func (c *challengeWriter) Write(b []byte) (int, error) { return c.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController flush the SDK's event streams.
func (c *challengeWriter) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// requireTicketdScope refuses, with 403 and an insufficient_scope challenge
// naming the scopes to ask for, a valid token that grants no ticketd scope:
// it authenticates (so not 401, which tells a client its token is bad and
// to fetch the same one again), but it can call no tool, and the MCP
// authorization spec answers a token lacking scope with 403
// insufficient_scope, which lets a client step up.
func requireTicketdScope(metadataURL string, challenge []string, granted func(context.Context) []string) func(http.Handler) http.Handler {
	param := scopeParam(challenge)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(granted(r.Context())) > 0 {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", %s, resource_metadata=%q`, param, metadataURL))
			call, _ := CallFrom(r.Context())
			NoteRefusal(r, call, errcode.Forbidden, "the token grants no ticketd scope")
			writeReply(w, http.StatusForbidden, rpcError(call.ID, jsonrpc.CodeInvalidRequest,
				"forbidden: this token grants no ticketd scope; ask the authorization server for tickets:read (and tickets:write to create tickets)"))
		})
	}
}

// countRefusals counts in metrics, as requests of transport mcp by tool
// and code, every /mcp request the edge answered itself (NoteRefusal):
// those never reach the MCP server, whose middleware counts the rest. The
// access log line, written outside, carries the same tool, code and (from
// noteCaller) tenant.
func countRefusals(metrics *observe.Metrics, scopeFor ScopeFor) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			next.ServeHTTP(w, r)
			info := reqinfo.From(r.Context())
			if info == nil || info.Code == "" {
				return
			}
			// A name the client made up is not a label value.
			tool := info.Route
			if _, known := scopeFor(tool); !known {
				tool = ""
			}
			metrics.Request(observe.MCP, tool, info.Code, time.Since(start))
		})
	}
}

// noteCaller records the verified caller of an /mcp request for the
// access log, so an edge refusal is logged with its tenant like REST's.
func noteCaller(caller func(context.Context) (authn.Principal, bool)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p, ok := caller(r.Context()); ok {
				reqinfo.From(r.Context()).SetCaller(p.Tenant, p.Subject)
			}
			next.ServeHTTP(w, r)
		})
	}
}
