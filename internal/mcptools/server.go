// Package mcptools is ticketd's MCP surface (docs/contract.md#mcp-tools):
// the tools Tools lists (those of the toolsets served), the ticket and
// project resources, the prompts and their completion, over one
// tickets.Service, served statelessly over Streamable HTTP or over stdio.
//
// The package is a thin port: it decodes arguments (parsing an operation ID
// once, in newTool), authorises the call against the principal's scopes,
// calls the service, and maps errors to the contract's structured tool
// errors (docs/contract.md#error-codes). The
// principal never comes from arguments: on HTTP it is the verified bearer
// token the transport puts in the request, on stdio the one verified at
// start-up and carried in the context.
package mcptools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/stdioguard"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Options adjusts NewServer.
type Options struct {
	// ReadOnly serves only the tools that need no more than tickets:read
	// (--read-only): the others are not registered, so they are neither
	// listed nor callable.
	ReadOnly bool
	// Toolsets are the sets of tools served (TICKETD_TOOLSETS); the zero
	// value is DefaultToolsets. Tools outside them are neither listed nor
	// callable.
	Toolsets Toolsets
	// Metrics counts tool calls; nil counts nothing.
	Metrics *observe.Metrics
	// Admission admits the writes and list pages (limits.Admission, the
	// one REST's go through too); nil admits every call at once.
	Admission *limits.Admission
	// HoldRefusal holds a refusal of Admission's before it is answered
	// and returns what is left of its wait (limits.Tenants.Hold); nil
	// answers at once.
	HoldRefusal func(ctx context.Context, tenant string, wait time.Duration) time.Duration
}

// NewServer returns the MCP server exposing ticketd's tools over svc. It
// holds no per-request state, so the same server serves every stateless
// HTTP request and may be shared by all of them. Tool calls are logged to
// logger (tool, tenant, operation ID, outcome, duration; never tokens);
// a nil logger discards them. They are counted in opts.Metrics as requests
// of transport mcp; nil metrics counts nothing.
//
// tools/list shows each caller only the tools its scopes allow (the token
// over HTTP, the start-up principal on stdio), and is marked
// cacheScope "private" because of it.
func NewServer(svc *tickets.Service, logger *slog.Logger, opts Options) *mcp.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	tools := served(opts)
	s := mcp.NewServer(mcpedge.ServerInfo(), &mcp.ServerOptions{
		Instructions: instructionsFor(tools),
		// The SDK logs every stateless request's session at Info; only its
		// warnings and errors are worth an operator's attention.
		Logger: slog.New(minLevel{logger.Handler(), slog.LevelWarn}),
		// Advertise what ticketd implements (not logging, which the SDK
		// would otherwise advertise); none of the lists ever changes.
		Capabilities: &mcp.ServerCapabilities{
			Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{},
			Prompts: &mcp.PromptCapabilities{}, Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler: complete(svc),
		// FilterTools makes tools/list depend on the caller.
		SetCacheable: mcpedge.PrivateToolList,
	})
	for _, t := range tools {
		t.add(s, t.def, svc)
	}
	registerResources(s, svc)
	registerPrompts(s, svc)
	// The first middleware is the outermost: the log line sees the result
	// after a panic was turned into an error, after the answer to an unknown
	// tool had its name bounded, enum arguments folded to lower case as
	// REST reads them, and after the SDK's argument
	// rejections were given the contract's error shape. FilterTools is
	// innermost: it only edits a tools/list result.
	s.AddReceivingMiddleware(logCalls(logger, opts.Metrics), recoverPanics(logger), boundUnknownTools(),
		foldEnums(Tools()), admit(opts.Admission, opts.HoldRefusal), shapeArgumentErrors(), resourceNotFoundCode(),
		mcpedge.FilterTools(ScopeFor(opts), callerScopes))
	return s
}

// ScopeFor returns the edge's view of the tools a server built with opts
// serves: the scope each needs, and known=false for a tool it does not
// serve (so a step-up check lets the SDK answer "unknown tool").
func ScopeFor(opts Options) mcpedge.ScopeFor {
	scopes := make(map[string]string)
	for _, t := range served(opts) {
		scopes[t.Name] = t.Scope
	}
	return func(tool string) (string, bool) {
		scope, ok := scopes[tool]
		return scope, ok
	}
}

// callerScopes returns the scopes the caller of req is granted.
func callerScopes(ctx context.Context, req mcp.Request) []string {
	p, ok := principalOf(ctx, req.GetExtra())
	if !ok {
		return nil
	}
	return GrantedScopes(p)
}

// StdioOptions are the operator's choices a stdio session serves with, as
// the HTTP server's: the toolsets, and ReadOnly (the read tools only).
type StdioOptions struct {
	Toolsets Toolsets
	ReadOnly bool
}

// ServeStdio serves the tools over in and out (newline-delimited JSON-RPC,
// as `ticketd stdio` does with stdin and stdout) until ctx ends or the client
// closes in. Every call acts as p, the principal of a token the caller
// verified at start-up; its scopes and expiry are re-checked on every call.
// Nothing but protocol is written to out, so logger must write elsewhere
// (stderr). It serves the tools opts names (the zero value: the default
// toolsets, read and write).
//
// The input goes through stdioguard: a malformed line, a batch or anything
// mcpedge.CheckMessage refuses is answered with a JSON-RPC error and the
// session goes on; when in ends, requests already read are answered (up to
// stdioguard.DefaultDrainTimeout) before ServeStdio returns.
func ServeStdio(ctx context.Context, svc *tickets.Service, p authn.Principal, logger *slog.Logger, in io.ReadCloser, out io.WriteCloser, opts StdioOptions) error {
	if p.Tenant == "" {
		return errors.New("serve stdio: the principal has no tenant")
	}
	// A stdio session's calls go through admission with the HTTP server's
	// defaults: one client may still send many calls at once, and each
	// list page holds up to a MiB.
	admission, err := NewAdmission(AdmissionSettings{})
	if err != nil {
		return fmt.Errorf("serve stdio: %w", err)
	}
	s := NewServer(svc, logger, Options{Admission: admission, Toolsets: opts.Toolsets, ReadOnly: opts.ReadOnly})
	// Added last, so outermost: every later middleware and handler sees the
	// principal in its context, the stdio counterpart of the HTTP token.
	s.AddReceivingMiddleware(withPrincipal(p))
	w := stdioguard.NewWriter(out)
	transport := &stdioguard.Transport{Transport: &mcp.IOTransport{
		Reader: stdioguard.Filter(in, w, stdioguard.FilterOptions{}),
		Writer: w,
	}}
	err = s.Run(ctx, transport)
	if cerr := out.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("serve stdio: %w", err)
	}
	return nil
}

// withPrincipal puts p in the context of every request.
func withPrincipal(p authn.Principal) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(authn.ContextWithPrincipal(ctx, p), method, req)
		}
	}
}

// minLevel drops records below level, keeping the SDK's routine session
// chatter out of the operator's log.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return minLevel{h.Handler.WithAttrs(attrs), h.level}
}

func (h minLevel) WithGroup(name string) slog.Handler {
	return minLevel{h.Handler.WithGroup(name), h.level}
}
