package mcptools

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/wire"
)

// operationIDPattern accepts exactly what operations.ParseID accepts: a
// version 4 or 7, variant 10xx UUID in 8-4-4-4-12 form, either case. The
// schema says it up front so a model sees the rule before its first call;
// the service checks it again for other transports.
const operationIDPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[47][0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$`

// Limits that only the MCP schemas state; the service's own limits come
// from the tickets package.
const (
	maxTicketRef = 64   // a UUID (36) or a key such as SUP-42 (at most 30)
	maxCursor    = 1024 // issued cursors are about 150 characters
)

// outputSchema describes a tool's structured content: its success shape T
// (adjusted by refine, if given) or the error shape shared by every tool.
// Both are listed so clients that validate structured content accept tool
// errors too.
func outputSchema[T any](refine func(*jsonschema.Schema)) *jsonschema.Schema {
	ok := inferred[T]()
	if refine != nil {
		refine(ok)
	}
	return &jsonschema.Schema{
		Type:        "object",
		Description: "The result on success; on a tool error (isError: true), an object with error {code, message, retryable}.",
		AnyOf:       []*jsonschema.Schema{ok, errorOutputSchema()},
	}
}

func errorOutputSchema() *jsonschema.Schema {
	s := inferred[ErrorOut]()
	// Every code, not only those the tools raise today: a stdio call with an
	// expired token is unauthenticated, and the SDK validates every answer.
	var statuses []any
	for _, r := range errcode.Table {
		if r.OperationStatus != "" {
			statuses = append(statuses, string(r.OperationStatus))
		}
	}
	s.Properties["status"].Enum = statuses
	s.Properties["error"].Properties["code"].Enum = stringEnum(errcode.Codes()...)
	ticketObject(s.Properties["ticket"])
	return s
}

// inferred and stringEnum are the wire package's, named short for the many
// uses here.
func inferred[T any]() *jsonschema.Schema { return wire.Infer[T]() }

func stringEnum[S ~string](values ...S) []any { return wire.StringEnum(values...) }

var ticketObject = wire.ConstrainTicket
