package mcpedge

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/errcode"
)

// ScopeFor names the scope a tool needs; known is false for a name that is
// not one of the server's tools.
type ScopeFor func(tool string) (scope string, known bool)

// StepUpOptions configures StepUp.
type StepUpOptions struct {
	// ScopeFor maps a tool to its scope. Required.
	ScopeFor ScopeFor
	// Scopes returns the scopes the verified caller may use, from the
	// request context (mcptools.TokenScopes). Required.
	Scopes func(ctx context.Context) []string
	// ResourceMetadataURL is this resource's RFC 9728 metadata URL, named
	// in the challenge so a client knows where to ask for the scope.
	ResourceMetadataURL string
}

// StepUp refuses, before the SDK runs, a tools/call for a tool whose scope
// the caller's token lacks: HTTP 403 with
//
//	WWW-Authenticate: Bearer error="insufficient_scope", scope="<granted> <needed>", resource_metadata="<url>"
//
// which is the MCP authorization spec's step-up signal, and a JSON-RPC
// error body, so a client that cannot step up sees the call fail while its
// session survives (a plain-text 403 would end the Go client's connection).
// Unknown tools and every other method pass on: the SDK answers them, and
// each tool still checks its scope itself (tools hidden from tools/list
// stay callable by name). It needs Body before it and token
// verification before it.
func StepUp(opts StepUpOptions) func(http.Handler) http.Handler {
	scopes := opts.Scopes
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			call, ok := CallFrom(r.Context())
			if !ok || call.Method != "tools/call" {
				next.ServeHTTP(w, r)
				return
			}
			need, known := opts.ScopeFor(call.Tool)
			if !known || slices.Contains(scopes(r.Context()), need) {
				next.ServeHTTP(w, r)
				return
			}
			// Granted plus needed, as the MCP authorization spec recommends:
			// a client that asks for only the missing scope loses the ones
			// it had, and then steps up back and forth for ever.
			granted := scopes(r.Context())
			want := append(slices.Clone(granted), need)
			challenge := fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q`, strings.Join(want, " "))
			if opts.ResourceMetadataURL != "" {
				challenge += fmt.Sprintf(`, resource_metadata=%q`, opts.ResourceMetadataURL)
			}
			w.Header().Set("WWW-Authenticate", challenge)
			NoteRefusal(r, call, errcode.Forbidden, "the token lacks scope "+need)
			writeReply(w, http.StatusForbidden, rpcError(call.ID, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("forbidden: tool %q needs scope %s, which this token lacks; ask the authorization server for a token with it", call.Tool, need)))
		})
	}
}

// FilterTools returns a receiving middleware (Server.AddReceivingMiddleware)
// that shows each caller only the tools its scopes allow: a tool whose scope
// is unknown is shown to no one. scopes reads the caller's scopes from the
// request (mcptools reads the token over HTTP, the start-up principal on
// stdio). It replaces the result's tool slice
// and never modifies a *mcp.Tool, which the server shares between callers.
// Pair it with PrivateToolList, so no cache shares one caller's list.
func FilterTools(scopeFor ScopeFor, scopes func(ctx context.Context, req mcp.Request) []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok {
				return res, err
			}
			have := scopes(ctx, req)
			shown := make([]*mcp.Tool, 0, len(list.Tools))
			for _, t := range list.Tools {
				if need, known := scopeFor(t.Name); known && slices.Contains(have, need) {
					shown = append(shown, t)
				}
			}
			filtered := *list
			filtered.Tools = shown
			return &filtered, nil
		}
	}
}

// PrivateToolList is a ServerOptions.SetCacheable that marks tools/list
// results private: FilterTools makes them depend on the caller's token. The
// TTL stays 0: with one, the Go client kept an old list after its token
// changed, and stateless serving never sends list_changed to clear it.
func PrivateToolList(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	if _, ok := req.(*mcp.ListToolsRequest); ok {
		c.CacheScope = "private"
	}
}
