package mcptools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkjson "github.com/segmentio/encoding/json"
)

// arguments reads a tool's arguments as the SDK's typed handlers
// (mcp.AddTool) read them, with the same results and the same errors, at a
// fraction of the cost: the SDK decodes them twice with its own decoder,
// which allocates 32 KiB for every decode, and encodes them again in
// between (docs/perf.md). Here they are decoded with encoding/json, once
// into a map to validate and once into the input type, and encoded again
// only when a number is written so that decoding them as they came would
// give the input type something else (decodeArguments).
type arguments struct {
	schema *jsonschema.Resolved
	// fast, when the schema's keywords allow one, accepts most valid
	// arguments at a fraction of Validate's cost (fastschema.go).
	fast *fastSchema
	// defaulted are the optional top-level properties that have a
	// default, which the SDK's defaults step adds when they are missing.
	defaulted []defaulted
	// defaults is an object of those defaults, written as the SDK's
	// encoding of the defaulted arguments writes them.
	defaults []byte
}

// defaulted is a property with a default, decoded as the SDK decodes it.
// The value is a scalar, so every call may share it.
type defaulted struct {
	name  string
	value any
}

// newArguments resolves a tool's input schema, given as the JSON the tool
// advertises, as the SDK resolves it for mcp.AddTool.
func newArguments(tool string, schemaJSON []byte) arguments {
	var s jsonschema.Schema
	if err := json.Unmarshal(schemaJSON, &s); err != nil {
		panic(fmt.Sprintf("tool %s: decode input schema: %v", tool, err))
	}
	resolved, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic(fmt.Sprintf("tool %s: resolve input schema: %v", tool, err))
	}
	a := arguments{schema: resolved, fast: compileFast(resolved.Schema())}
	defaults := make(map[string]any)
	for name, p := range s.Properties {
		// The SDK applies defaults below the top level too, which would
		// need its whole walk on every call; ticketd's schemas have none.
		if nestedDefault(p) {
			panic(fmt.Sprintf("tool %s: property %s has a default below the top level", tool, name))
		}
		// As in the SDK, a required property's default is never applied.
		if p.Default == nil || slices.Contains(s.Required, name) {
			continue
		}
		var v any
		if err := json.Unmarshal(p.Default, &v); err != nil {
			panic(fmt.Sprintf("tool %s: property %s: decode default: %v", tool, name, err))
		}
		// decodeArguments decodes the arguments over the defaults, which
		// replaces a scalar but would merge into an object.
		switch v.(type) {
		case map[string]any, []any:
			panic(fmt.Sprintf("tool %s: property %s has a default that is no scalar", tool, name))
		}
		a.defaulted, defaults[name] = append(a.defaulted, defaulted{name, v}), v
	}
	// decodeArguments lays every default under the arguments once any is
	// missing; a second default sent as null would then keep its default
	// where the SDK decodes the zero value.
	if len(a.defaulted) > 1 {
		panic(fmt.Sprintf("tool %s: %d properties have defaults; decodeArguments matches the SDK for at most one", tool, len(a.defaulted)))
	}
	if a.defaults, err = json.Marshal(defaults); err != nil {
		panic(fmt.Sprintf("tool %s: encode defaults: %v", tool, err))
	}
	return a
}

// nestedDefault reports whether a property of s, or of one of them, has a
// default: where the SDK's defaults step looks below the top level.
func nestedDefault(s *jsonschema.Schema) bool {
	for _, p := range s.Properties {
		if p.Default != nil || nestedDefault(p) {
			return true
		}
	}
	return false
}

// decodeArguments returns raw decoded into In, or the tool error result the
// SDK answers for it: "validating "arguments": …" for arguments that do not
// fit the schema (which shapeArgumentErrors turns into invalid_input).
// Missing arguments are {}; null ones are as the SDK takes them (a panic
// in its defaults step for a tool with defaults, which recoverPanics
// answers).
//
// The SDK decodes In from the map it validated, encoded again. Decoding
// raw itself over the defaults it lacks gives the same In, and is what
// happens unless a number in raw is not written as that encoding writes
// it (10.0, 1e1, or an integer too long for a float64, which the SDK's
// path rounds): then In is decoded from the map, as the SDK does.
// encoding/json matches field names case-insensitively where the SDK's
// decoder does not; that never shows, because every input schema refuses
// properties it does not name (additionalProperties false, which
// TestInputSchemasAreClosed checks), so "Title" fails validation before
// any decode. Duplicate keys, where the two decodes could differ, never
// get here: mcpedge.CheckMessage refuses them on both transports.
// Arguments encoding/json cannot decode (a number out of range, say) take
// the SDK's own path (sdkDecodeArguments), for its answer in its words.
func decodeArguments[In any](a arguments, raw json.RawMessage) (In, *mcp.CallToolResult) {
	var in In
	m := make(map[string]any)
	if len(raw) > 0 && json.Unmarshal(raw, &m) != nil {
		return sdkDecodeArguments[In](a, raw)
	}
	instance, defaulted, bad := a.check(m)
	if bad != nil {
		return in, bad
	}
	if !plainNumbers(raw) {
		data, err := json.Marshal(instance)
		if err != nil {
			return in, argumentError(fmt.Errorf(`validating "arguments": marshalling with defaults: %w`, err))
		}
		if json.Unmarshal(data, &in) != nil {
			return sdkDecodeArguments[In](a, raw)
		}
		return in, nil
	}
	if defaulted && json.Unmarshal(a.defaults, &in) != nil ||
		len(raw) > 0 && json.Unmarshal(raw, &in) != nil {
		return sdkDecodeArguments[In](a, raw)
	}
	return in, nil
}

// sdkDecodeArguments is decodeArguments done wholly as the SDK does it,
// with the SDK's decoder (32 KiB a decode): only for arguments
// encoding/json refuses, whose answer (and its text) is the SDK's.
func sdkDecodeArguments[In any](a arguments, raw json.RawMessage) (In, *mcp.CallToolResult) {
	var in In
	m := make(map[string]any)
	if len(raw) > 0 {
		if err := sdkUnmarshal(raw, &m); err != nil {
			return in, argumentError(fmt.Errorf(`validating "arguments": unmarshaling arguments: %w`, err))
		}
	}
	instance, _, bad := a.check(m)
	if bad != nil {
		return in, bad
	}
	data, err := json.Marshal(instance)
	if err != nil {
		return in, argumentError(fmt.Errorf(`validating "arguments": marshalling with defaults: %w`, err))
	}
	if err := sdkUnmarshal(data, &in); err != nil {
		return in, argumentError(err)
	}
	return in, nil
}

// sdkUnmarshal decodes data into v as the SDK's decoder does
// (go-sdk/internal/json, which also bounds the depth, as the SDK's decode
// of the whole request already did).
func sdkUnmarshal(data []byte, v any) error {
	d := sdkjson.NewDecoder(bytes.NewReader(data))
	d.DontMatchCaseInsensitiveStructFields()
	return d.Decode(v)
}

// check adds the defaults m lacks and validates the result, as the SDK
// does (mcp/tool.go, applySchema), and reports whether it added any. The
// SDK's defaults step (jsonschema.Resolved.ApplyDefaults) walks every
// property by reflection; for top-level scalar defaults, all that
// newArguments lets through, it comes to these assignments, and like it
// they panic on the nil map of null arguments. Arguments the fast
// validator accepts are valid; all others, and every error's text, are
// Validate's.
func (a arguments) check(m map[string]any) (instance any, defaulted bool, bad *mcp.CallToolResult) {
	for _, d := range a.defaulted {
		if _, ok := m[d.name]; !ok {
			m[d.name], defaulted = d.value, true
		}
	}
	instance = m
	if a.fast != nil && a.fast.accepts(m) {
		return instance, defaulted, nil
	}
	if err := a.schema.Validate(&instance); err != nil {
		return nil, false, argumentError(fmt.Errorf(`validating "arguments": %w`, err))
	}
	return instance, defaulted, nil
}

// argumentError is the SDK's answer to arguments it cannot use: a tool
// error result with err as its text.
func argumentError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
}

// plainNumbers reports whether every number in the JSON value b is an
// integer of at most 15 digits with neither fraction nor exponent: one a
// float64 holds exactly and encoding/json writes back as it is written.
func plainNumbers(b []byte) bool {
	inString, escaped := false, false
	digits := -1 // outside a number
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString, digits = true, -1
		case c >= '0' && c <= '9':
			if digits < 0 {
				digits = 0
			}
			if digits++; digits > 15 {
				return false
			}
		case c == '-':
			digits = 0
		case c == '.' || c == 'e' || c == 'E':
			// Outside a number, e is a letter of true or false.
			if digits >= 0 {
				return false
			}
		default:
			digits = -1
		}
	}
	return true
}

// toolResult is what the SDK makes of a typed handler's answer: a
// JSON-RPC error stays one, any other error becomes a tool error result
// with its text, and no result an empty one.
func toolResult(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err != nil {
		// The SDK asks the type, not errors.As: a wrapped JSON-RPC error
		// is a tool error.
		if wire, ok := err.(*jsonrpc.Error); ok {
			return nil, wire
		}
		return argumentError(err), nil
	}
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	return res, nil
}
