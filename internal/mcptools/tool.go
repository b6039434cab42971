package mcptools

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// Tool is one MCP tool, whole: what clients see (name, title, description,
// schemas, annotations), the scope a caller needs, and the handler. Every
// tool is one such value in the list Tools returns, and NewServer registers
// those of that list in its toolsets (toolsetTools).
type Tool struct {
	// Name is the tool's contract name, e.g. create_ticket.
	Name string
	// Scope is what a caller's token must grant to call it.
	Scope string

	def *mcp.Tool
	// strictOutput is the output schema every result must fit: def's,
	// with the closed objects and required members compact leaves out.
	strictOutput *jsonschema.Schema
	add          func(s *mcp.Server, def *mcp.Tool, svc *tickets.Service)
	// namesOperation: the input has an operation_id, so errors echo it
	// (and only then does the output schema allow one).
	namesOperation bool
}

// Def returns what tools/list shows of the tool.
func (t Tool) Def() *mcp.Tool { return t.def }

// call is what a handler knows about the call beyond its arguments: who
// makes it, and the operation ID it names, parsed once (zero when none).
type call struct {
	principal   authn.Principal
	operationID operations.ID
}

// caller is who the service acts for.
func (c call) caller() tickets.Caller {
	return tickets.Caller{Tenant: c.principal.Tenant, Subject: c.principal.Subject}
}

// echo is the operation ID as answers name it: its stored (lower-case)
// form, or "" when the call names none that parses.
func (c call) echo() string {
	if c.operationID.IsZero() {
		return ""
	}
	return c.operationID.String()
}

// handler runs one authorised call; a returned error becomes the tool error
// of its contract code.
type handler[In, Out any] func(ctx context.Context, svc *tickets.Service, c call, in In) (Out, error)

// spec is how a tool is written down; newTool derives the rest.
type spec[In, Out any] struct {
	name, title, description string
	scope                    string
	readOnly                 bool
	// destructive marks a write that overwrites what is there (an update),
	// as opposed to one that only adds (a ticket, a comment).
	destructive bool
	// versionConflicts marks a tool that takes if_version and so can answer
	// version_conflict with the current ticket.
	versionConflicts bool
	// approvals marks a write the approval gate checks (tickets.Service.gate),
	// which can answer approval_required with an approval to ask for.
	approvals bool
	// input and output refine the schemas inferred from In and Out.
	input, output func(*jsonschema.Schema)
	handle        handler[In, Out]
}

// newTool turns a spec into a Tool: schemas inferred from In and Out (then
// refined), annotations from readOnly, and a handler that authorises the
// call against scope on every call, replays included, and answers errors
// in the contract's shape.
func newTool[In, Out any](sp spec[In, Out]) Tool {
	in := inferred[In]()
	if sp.input != nil {
		sp.input(in)
	}
	// Only a tool whose input names an operation ID echoes one in its errors.
	_, namesOperation := any(*new(In)).(interface{ operationID() string })
	strict := outputSchema[Out](sp.output, errorShape{
		operationID: namesOperation, versionConflicts: sp.versionConflicts, approvals: sp.approvals,
	})
	def := &mcp.Tool{
		Name: sp.name, Title: sp.title, Description: sp.description,
		InputSchema: in, OutputSchema: compact(strict),
		// The title is the tool's own (which clients show first), not
		// repeated in the annotations.
		Annotations: &mcp.ToolAnnotations{
			ReadOnlyHint: sp.readOnly, IdempotentHint: true, OpenWorldHint: jsonschema.Ptr(false),
		},
	}
	if !sp.readOnly {
		// The hint means nothing for a read-only tool (MCP spec).
		def.Annotations.DestructiveHint = jsonschema.Ptr(sp.destructive)
	}
	// The SDK marshals a *jsonschema.Schema input schema on every 2026-07-28
	// call to look for x-mcp-header annotations (docs/upstream-go-sdk.md);
	// given the JSON once, it only decodes it. Def keeps the typed schema.
	inJSON, err := json.Marshal(in)
	if err != nil {
		panic(fmt.Sprintf("tool %s: marshal input schema: %v", sp.name, err))
	}
	// The tool is registered with the SDK's untyped AddTool: its typed
	// mcp.AddTool decodes the arguments twice with a decoder that allocates
	// 32 KiB each time (docs/perf.md); inputs reads them as it does, resolved
	// once here from the JSON the SDK would resolve.
	inputs := newArguments(sp.name, inJSON)
	add := func(s *mcp.Server, def *mcp.Tool, svc *tickets.Service) {
		reg := *def
		reg.InputSchema = json.RawMessage(inJSON)
		run := func(ctx context.Context, req *mcp.CallToolRequest, args In) (*mcp.CallToolResult, outcome[Out], error) {
			id, idErr := operationIDOf(args)
			c := call{operationID: id}
			p, err := authorize(ctx, req, sp.scope)
			if err != nil {
				return failure[Out](err, c.echo())
			}
			if idErr != nil {
				return failure[Out](idErr, "")
			}
			c.principal = p
			out, err := sp.handle(withApprovalChannel(ctx, req), svc, c, args)
			if res, rpcErr, ok := askForApproval(err); ok {
				return res, outcome[Out]{}, rpcErr
			}
			if err != nil {
				return failure[Out](err, c.echo())
			}
			return success(out)
		}
		// The handler sets the structured content itself (structured), so
		// nothing validates it on the way out; the SDK still advertises
		// def's output schema.
		s.AddTool(&reg, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			in, bad := decodeArguments[In](inputs, req.Params.Arguments)
			if bad != nil {
				return bad, nil
			}
			// A JSON-RPC error, or a request for input, has no content.
			res, out, err := run(ctx, req, in)
			if err == nil && (out.ok != nil || out.err != nil) {
				res, err = structured(sp.name, res, out)
			}
			return toolResult(res, err)
		})
	}
	return Tool{Name: sp.name, Scope: sp.scope, def: def, strictOutput: strict, add: add, namesOperation: namesOperation}
}

// checkOutput, when set, checks every structured result a tool answers
// before it is sent, and a failure becomes the call's JSON-RPC error. The
// package's tests set it (outputs_test.go) to validate each result against
// the tool's advertised output schema, the check the SDK would otherwise
// make on every call in production.
var checkOutput func(tool string, isError bool, content []byte) error

// structured puts out's JSON in res as the SDK does for a typed result (as
// structuredContent, and as the one text block when res has none) but
// without the SDK's output validation, which decodes the JSON into maps,
// validates and encodes it again on every call: a third of a list call's
// CPU (docs/perf.md). The outputs are ticketd's own types, whose fit to
// the schemas the tests check on every result they see (checkOutput).
func structured[Out any](tool string, res *mcp.CallToolResult, out outcome[Out]) (*mcp.CallToolResult, error) {
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	// Called directly: json.Marshal(out) would scan and copy the JSON
	// MarshalJSON returns once more to compact it, which it already is.
	body, err := out.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("marshaling output: %w", err)
	}
	if checkOutput != nil {
		if err := checkOutput(tool, res.IsError, body); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
	}
	res.StructuredContent = json.RawMessage(body)
	if res.Content == nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(body)}}
	}
	return res, nil
}

// namesOperation reports whether the named tool's input has an
// operation_id.
func namesOperation(name string) bool {
	for _, t := range Tools() {
		if t.Name == name {
			return t.namesOperation
		}
	}
	return false
}

// operationIDOf parses the operation ID an input names: the one parse of
// the call. An input that names none, or leaves an optional one empty
// (preview_ticket), gives the zero ID; one that does not parse is an invalid
// operation_id (the schema's pattern stops most before they get here).
func operationIDOf(in any) (operations.ID, error) {
	o, ok := in.(interface{ operationID() string })
	if !ok || o.operationID() == "" {
		return operations.ID{}, nil
	}
	id, err := operations.ParseID(o.operationID())
	if err != nil {
		return operations.ID{}, &tickets.ValidationError{Fields: []tickets.FieldError{{Field: "operation_id", Message: err.Error()}}}
	}
	return id, nil
}

// shownError replaces the caller-visible text of err (a not_found, say,
// that names what was looked up) while keeping its code.
type shownError struct {
	msg string
	err error
}

func (e shownError) Error() string { return e.msg }
func (e shownError) Unwrap() error { return e.err }

// authorize returns the caller's principal if it may use a tool needing
// scope. It runs on every call, replays included, so a token that lost a
// scope or expired stops working at once.
//
// Errors wrap authn.ErrUnauthenticated (no principal, or it expired) or
// authn.ErrForbidden (the scope is missing).
func authorize(ctx context.Context, req *mcp.CallToolRequest, scope string) (authn.Principal, error) {
	p, ok := principalOf(ctx, req.Extra)
	if !ok {
		return authn.Principal{}, fmt.Errorf("%w: no verified token came with this call", authn.ErrUnauthenticated)
	}
	if p.Expired(time.Now()) {
		return authn.Principal{}, fmt.Errorf("%w: the token expired at %s", authn.ErrUnauthenticated,
			p.Expires.UTC().Format(time.RFC3339))
	}
	if !p.HasScope(scope) {
		return authn.Principal{}, fmt.Errorf("%w: this token lacks the %s scope that %s needs",
			authn.ErrForbidden, scope, req.Params.Name)
	}
	return p, nil
}

// principalOf finds the caller: the verified bearer token the HTTP transport
// attached to the request, or else the principal the stdio server put in the
// context. Arguments are never consulted.
func principalOf(ctx context.Context, extra *mcp.RequestExtra) (authn.Principal, bool) {
	if extra != nil {
		if p, ok := PrincipalFrom(extra.TokenInfo); ok {
			return p, true
		}
	}
	return authn.PrincipalFromContext(ctx)
}
