package server

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/rest"
)

// scopeParam is the scope auth-param of every 401 challenge on /mcp.
var scopeParam = fmt.Sprintf("scope=%q", strings.Join(challengeScopes, " "))

// scopedChallenge adds scope="tickets:read tickets:write" to the 401
// challenge auth.RequireBearerToken writes, which has no option for a scope
// hint that is not also a requirement: an OAuth client then asks for the
// scopes every tool needs on its first authorization.
func scopedChallenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challengeWriter{ResponseWriter: w}, r)
	})
}

type challengeWriter struct {
	http.ResponseWriter
}

func (c *challengeWriter) WriteHeader(status int) {
	h := c.ResponseWriter.Header()
	if v := h.Get("WWW-Authenticate"); status == http.StatusUnauthorized && !strings.Contains(v, "scope=") {
		if v == "" {
			h.Set("WWW-Authenticate", "Bearer "+scopeParam)
		} else {
			h.Set("WWW-Authenticate", v+", "+scopeParam)
		}
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
func requireTicketdScope(metadataURL string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if len(mcptools.TokenScopes(r.Context())) > 0 {
				next.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", %s, resource_metadata=%q`, scopeParam, metadataURL))
			body, _ := jsonrpc.EncodeMessage(&jsonrpc.Response{Error: &jsonrpc.Error{
				Code:    jsonrpc.CodeInvalidRequest,
				Message: "forbidden: this token grants no ticketd scope; ask the authorization server for tickets:read (and tickets:write to create tickets)",
			}})
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write(body) // the status is sent; a failed write has no one left to tell
		})
	}
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

// toolKind says which tenant bucket a tool call draws from: tools that need
// only tickets:read are reads, the rest writes. An unknown tool, which the
// SDK refuses at once, counts as a read.
func toolKind(opts mcptools.Options) func(tool string) limits.Kind {
	scopeFor := mcptools.ScopeFor(opts)
	return func(tool string) limits.Kind {
		if scope, ok := scopeFor(tool); ok && scope != authn.ScopeRead {
			return limits.Write
		}
		return limits.Read
	}
}
