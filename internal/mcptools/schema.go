package mcptools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/operations"
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

// Output schemas are what every client that loads ticketd's tools pays for
// on every turn (docs/contract.md#lists-and-the-context-budget: tools/list within 24 KiB), so they are exact
// but terse: no descriptions (the tool's description says what the fields
// mean), and a shape used twice or more in one schema written once under
// $defs and referred to as #/$defs/<name> (inlineSingleUses puts a shape
// used once in place). A reference inside one tool's schema is all a
// client resolves: none points outside its document.

// The shared definitions.
const (
	defTicket   = "ticket"
	defError    = "error"
	defDelivery = "delivery"
	defChange   = "change"
)

// definitions builds each shared definition but the error's, which
// depends on the tool (errorOutputSchema).
var definitions = map[string]func() *jsonschema.Schema{
	defTicket: contract.TicketSchema,
	defDelivery: func() *jsonschema.Schema {
		s := inferred[contract.Delivery]()
		s.Properties["status"].Enum = stringEnum(contract.DeliveryStatuses...)
		s.Properties["attempts"].Minimum = jsonschema.Ptr(0.0)
		return s
	},
	defChange: func() *jsonschema.Schema {
		// A field's value before and after: a string, null (an unassigned
		// assignee) or the labels.
		value := func() *jsonschema.Schema {
			return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
				{Type: "string"}, {Type: "null"}, {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
			}}
		}
		return &jsonschema.Schema{
			Type: "object", Required: []string{"from", "to"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			Properties: map[string]*jsonschema.Schema{"from": value(), "to": value()},
		}
	},
}

// ticketOrSummary is an item of list_tickets: a ticket's summary or, with
// detail "full", the ticket. A summary's fields are some of the ticket's,
// with the same schemas, so one object says both, in half the bytes of two:
// the ticket's properties, the summary's required ones, and the ticket's
// others all present or all absent (each requires the next, in a ring).
func ticketOrSummary() *jsonschema.Schema {
	full, summary := contract.TicketSchema(), contract.TicketSummarySchema()
	terse(full)
	terse(summary)
	for name, p := range summary.Properties {
		a, errA := json.Marshal(p)
		b, errB := json.Marshal(full.Properties[name])
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			panic(fmt.Sprintf("summary field %s is not the ticket's: %s, %s", name, a, b)) // a programming error, caught by every test
		}
	}
	var rest []string
	for _, name := range full.Required {
		if !slices.Contains(summary.Required, name) {
			rest = append(rest, name)
		}
	}
	full.Required = summary.Required
	full.DependentRequired = map[string][]string{}
	for i, name := range rest {
		full.DependentRequired[name] = []string{rest[(i+1)%len(rest)]}
	}
	return full
}

// ref refers to a shared definition.
func ref(name string) *jsonschema.Schema { return &jsonschema.Schema{Ref: "#/$defs/" + name} }

// outputSchema describes a tool's structured content: its success shape T
// (adjusted by refine, if given, which puts refs where shared shapes go) or
// the error shape of every tool (with version_conflict's current_version
// and ticket for a tool that can raise it). Both are listed so clients that
// validate structured content accept tool errors too.
func outputSchema[T any](refine func(*jsonschema.Schema), shape errorShape) *jsonschema.Schema {
	ok := inferred[T]()
	if refine != nil {
		refine(ok)
	}
	root := &jsonschema.Schema{Type: "object", AnyOf: []*jsonschema.Schema{ok, ref(defError)}}
	root.Defs = map[string]*jsonschema.Schema{defError: errorOutputSchema(shape)}
	addDefs(root.Defs, root)
	inlineSingleUses(root)
	// The root says "object" (MCP requires it of an output schema), so
	// its branches need not say it again.
	for _, branch := range root.AnyOf {
		branch.Type = ""
	}
	for sub := range all(root) {
		// An enum of strings says the type already.
		if sub.Type == "string" && len(sub.Enum) > 0 {
			sub.Type = ""
		}
	}
	terse(root)
	return root
}

// compact is the output schema tools/list shows for strict, the one the
// package's tests check every result against (outputs_test.go): the same
// members, types, enums and formats, without what only a validator uses.
// A result's objects are closed and complete because ticketd builds them,
// and "no other members", "these are always present", "at least 1" and
// "an object" of what has properties, said of every object, were a third
// of tools/list (docs/contract.md#lists-and-the-context-budget). The root
// still says "object" (MCP requires it) and each branch its required
// members: they tell a success from an error.
func compact(strict *jsonschema.Schema) *jsonschema.Schema {
	b, err := json.Marshal(strict)
	if err != nil {
		panic(fmt.Sprintf("compact output schema: %v", err)) // a programming error, caught by every test
	}
	var root jsonschema.Schema
	if err := json.Unmarshal(b, &root); err != nil {
		panic(fmt.Sprintf("compact output schema: %v", err))
	}
	branches := map[*jsonschema.Schema]bool{}
	for _, b := range root.AnyOf {
		branches[b] = true
	}
	for sub := range all(&root) {
		if closed(sub) {
			sub.AdditionalProperties = nil
		}
		if !branches[sub] {
			sub.Required, sub.DependentRequired = nil, nil
		}
		if sub != &root && sub.Type == "object" && len(sub.Properties) > 0 {
			sub.Type = ""
		}
		sub.Minimum = nil
	}
	return &root
}

// closed reports whether s is an object schema that allows no members
// beyond its properties.
func closed(s *jsonschema.Schema) bool {
	a := s.AdditionalProperties
	return len(s.Properties) > 0 && a != nil && a.Not != nil && reflect.ValueOf(*a.Not).IsZero()
}

// inlineSingleUses writes a definition that root refers to only once in
// place of its reference: $defs pays only for a shape used twice or more.
func inlineSingleUses(root *jsonschema.Schema) {
	uses := map[string][]*jsonschema.Schema{}
	for sub := range all(root) {
		if name, ok := strings.CutPrefix(sub.Ref, "#/$defs/"); ok {
			uses[name] = append(uses[name], sub)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(uses)) {
		if refs := uses[name]; len(refs) == 1 {
			*refs[0] = *root.Defs[name]
			delete(root.Defs, name)
		}
	}
	if len(root.Defs) == 0 {
		root.Defs = nil
	}
}

// addDefs puts into defs every shared definition s refers to, and those
// they refer to in turn.
func addDefs(defs map[string]*jsonschema.Schema, s *jsonschema.Schema) {
	for _, name := range refsOf(s) {
		if _, ok := defs[name]; ok {
			continue
		}
		d := definitions[name]()
		defs[name] = d
		addDefs(defs, d)
	}
}

// refsOf lists the shared definitions s refers to.
func refsOf(s *jsonschema.Schema) []string {
	var names []string
	for sub := range all(s) {
		if name, ok := strings.CutPrefix(sub.Ref, "#/$defs/"); ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// terse removes every description from s and its subschemas.
func terse(s *jsonschema.Schema) {
	for sub := range all(s) {
		sub.Description = ""
	}
}

// all yields s and every schema inside it, depth first (jsonschema-go
// keeps its own walk unexported).
func all(s *jsonschema.Schema) iter.Seq[*jsonschema.Schema] {
	return func(yield func(*jsonschema.Schema) bool) { walkSchema(s, yield) }
}

func walkSchema(s *jsonschema.Schema, yield func(*jsonschema.Schema) bool) bool {
	if s == nil {
		return true
	}
	if !yield(s) {
		return false
	}
	for _, sub := range []*jsonschema.Schema{s.Items, s.AdditionalProperties, s.Not, s.PropertyNames, s.Contains} {
		if !walkSchema(sub, yield) {
			return false
		}
	}
	for _, list := range [][]*jsonschema.Schema{s.AnyOf, s.AllOf, s.OneOf, s.PrefixItems} {
		for _, sub := range list {
			if !walkSchema(sub, yield) {
				return false
			}
		}
	}
	for _, m := range []map[string]*jsonschema.Schema{s.Properties, s.Defs, s.PatternProperties} {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			if !walkSchema(m[name], yield) {
				return false
			}
		}
	}
	return true
}

// errorShape says which members of ErrorOut a tool's errors can carry
// beyond error and status: operation_id if its input names one;
// version_conflict's current_version and ticket if it takes if_version;
// approval_required's approval_id, approval_url and expires_at if the
// approval gate checks it (tickets.Service.gate; docs/contract.md#approval).
type errorShape struct {
	operationID, versionConflicts, approvals bool
}

// errorOutputSchema is the structured content of a tool's errors: every
// code, with the members its shape allows.
func errorOutputSchema(shape errorShape) *jsonschema.Schema {
	s := inferred[ErrorOut]()
	var statuses []any
	for _, r := range errcode.Table {
		if r.OperationStatus != "" && !slices.Contains(statuses, any(string(r.OperationStatus))) {
			statuses = append(statuses, string(r.OperationStatus))
		}
	}
	s.Properties["status"].Enum = statuses
	// error.code is a string, not an enum of errcode.Table's codes: the
	// table is the vocabulary (docs/agents.md, OpenAPI), and fourteen codes in
	// every tool's schema cost 2 KiB of the tools/list budget.
	s.Properties["error"].Properties["retry_after_ms"].Minimum = jsonschema.Ptr(0.0)
	if !shape.operationID {
		delete(s.Properties, "operation_id")
	}
	if shape.versionConflicts {
		s.Properties["ticket"] = ref(defTicket)
		s.Properties["current_version"].Minimum = jsonschema.Ptr(1.0)
	} else {
		delete(s.Properties, "ticket")
		delete(s.Properties, "current_version")
	}
	if !shape.approvals {
		for _, name := range []string{"approval_id", "approval_url", "expires_at"} {
			delete(s.Properties, name)
		}
	}
	return s
}

// inferred and stringEnum are the contract package's, named short for the many
// uses here.
func inferred[T any]() *jsonschema.Schema { return contract.Infer[T]() }

func stringEnum[S ~string](values ...S) []any { return contract.StringEnum(values...) }

// succeeded is the status of a write's success result: always succeeded,
// said as a const (shorter than a one-value enum with its type).
func succeeded() *jsonschema.Schema {
	return &jsonschema.Schema{Const: jsonschema.Ptr[any](string(operations.StatusSucceeded))}
}
