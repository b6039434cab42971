package mcptools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// foldedArguments are the enum-valued arguments the ticket service reads
// case-insensitively and trimmed (tickets normalises priority, status and
// sort with strings.ToLower(strings.TrimSpace)), so REST accepts
// "NORMAL". The input schemas list the lower-case values only, and the
// tools/list budget has no room for a case-insensitive pattern, so the
// MCP side folds these before the SDK checks the schema instead.
var foldedArguments = []string{"priority", "status", "sort"}

// foldEnums rewrites a tools/call's folded arguments (a string, or an array
// of strings where the schema allows one) to the enum value they name
// when trimmed and lower-cased, before the SDK validates them: MCP then
// accepts what REST accepts. A value that names no enum value is left as
// sent, for the SDK to refuse in its usual words; arguments that need no
// folding are passed on untouched, not re-encoded.
func foldEnums(tools []Tool) mcp.Middleware {
	enums := make(map[string]map[string][]string) // tool → argument → values
	for _, t := range tools {
		schema, ok := t.def.InputSchema.(*jsonschema.Schema)
		if !ok {
			continue
		}
		for _, name := range foldedArguments {
			if values := enumValues(schema.Properties[name]); len(values) > 0 {
				if enums[t.Name] == nil {
					enums[t.Name] = make(map[string][]string)
				}
				enums[t.Name][name] = values
			}
		}
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
				if props := enums[call.Params.Name]; props != nil {
					if folded, changed := foldArguments(call.Params.Arguments, props); changed {
						call.Params.Arguments = folded
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

// enumValues returns the string values a property's schema allows: its
// enum, or those of an anyOf branch or of array items (list_tickets'
// status is a value or an array of values).
func enumValues(s *jsonschema.Schema) []string {
	if s == nil {
		return nil
	}
	var out []string
	for _, v := range s.Enum {
		if str, ok := v.(string); ok {
			out = append(out, str)
		}
	}
	if s.Items != nil {
		out = append(out, enumValues(s.Items)...)
	}
	for _, branch := range s.AnyOf {
		out = append(out, enumValues(branch)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// foldArguments folds props' values in args, a JSON object, and says
// whether anything changed. Arguments that are not an object, or values
// of another type, are left for the SDK to judge.
func foldArguments(args json.RawMessage, props map[string][]string) (json.RawMessage, bool) {
	var obj map[string]json.RawMessage
	if len(args) == 0 || json.Unmarshal(args, &obj) != nil {
		return args, false
	}
	changed := false
	for name, values := range props {
		raw, ok := obj[name]
		if !ok {
			continue
		}
		if folded, ok := foldValue(raw, values); ok {
			obj[name] = folded
			changed = true
		}
	}
	if !changed {
		return args, false
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return args, false // unreachable: every member was decoded from JSON
	}
	return out, true
}

// foldValue folds a string, or each string of an array, and says whether
// any element changed.
func foldValue(raw json.RawMessage, values []string) (json.RawMessage, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		folded, ok := fold(one, values)
		if !ok {
			return raw, false
		}
		out, err := json.Marshal(folded)
		return out, err == nil
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return raw, false
	}
	changed := false
	for i, s := range many {
		if folded, ok := fold(s, values); ok {
			many[i], changed = folded, true
		}
	}
	if !changed {
		return raw, false
	}
	out, err := json.Marshal(many)
	return out, err == nil
}

// fold returns the enum value s names when trimmed and lower-cased, and
// false when s is that value already or names none.
func fold(s string, values []string) (string, bool) {
	folded := strings.ToLower(strings.TrimSpace(s))
	if folded == s {
		return s, false
	}
	if _, found := slices.BinarySearch(values, folded); !found {
		return s, false
	}
	return folded, true
}
