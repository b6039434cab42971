package mcptools

import (
	"math"
	"reflect"
	"regexp"
	"slices"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// fastSchema answers, for the few keywords ticketd's input schemas use,
// whether an instance is one jsonschema-go's (*Resolved).Validate accepts,
// without its reflection, error wrapping, per-call allocations and the
// goroutine stack its recursion grows. It only ever says yes when
// Validate would: a no, or an instance it does not know how to judge,
// sends the caller to Validate, whose error text the SDK's answer
// carries. The semantics followed are those of validate.go and util.go
// (jsonType, equalValue) in
// $(go list -m -f '{{.Dir}}' github.com/google/jsonschema-go)/jsonschema.
type fastSchema struct {
	// types is the "type" keyword as a list; nil means no type keyword.
	types []string
	// enum holds scalar members only (string, float64, bool, nil); nil
	// means no enum keyword (an empty one, which accepts nothing, is not
	// nil).
	enum                 []any
	minimum, maximum     *float64
	minLength, maxLength *int
	pattern              *regexp.Regexp
	items                *fastSchema
	minItems, maxItems   *int
	uniqueItems          bool
	properties           map[string]*fastSchema
	required             []string
	// closed is additionalProperties false; otherwise additional, if
	// set, judges every property properties does not name.
	closed     bool
	additional *fastSchema
	anyOf      []*fastSchema
}

// fastKeywords are the jsonschema.Schema fields compileFast knows. A
// schema with any other field set (a $ref, $schema, allOf, const, an
// unknown keyword in Extra…) gets no fast validator. description and
// default are annotations Validate ignores; so is format, which
// validate.go never asserts.
var fastKeywords = []string{
	"Type", "Types", "Enum", "Minimum", "Maximum", "MinLength", "MaxLength", "Pattern",
	"Items", "MinItems", "MaxItems", "UniqueItems", "Properties", "Required", "AdditionalProperties", "AnyOf",
	"Description", "Default", "Format",
}

// compileFast returns the fast validator of s, or nil if s uses a keyword
// or shape it does not handle.
func compileFast(s *jsonschema.Schema) *fastSchema {
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if !v.Field(i).IsZero() && !slices.Contains(fastKeywords, v.Type().Field(i).Name) {
			return nil
		}
	}
	f := &fastSchema{
		minimum: s.Minimum, maximum: s.Maximum, minLength: s.MinLength, maxLength: s.MaxLength,
		minItems: s.MinItems, maxItems: s.MaxItems, uniqueItems: s.UniqueItems, required: s.Required,
	}
	switch {
	case s.Type != "":
		f.types = []string{s.Type}
	case s.Types != nil:
		f.types = s.Types
	}
	if s.Enum != nil {
		for _, e := range s.Enum {
			if !scalar(e) {
				return nil
			}
		}
		f.enum = s.Enum
	}
	if s.Pattern != "" {
		// Resolve compiled it the same way (resolve.go, checkLocal), so
		// this cannot fail for a resolved schema.
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil
		}
		f.pattern = re
	}
	if s.Items != nil {
		if f.items = compileFast(s.Items); f.items == nil {
			return nil
		}
	}
	if s.Properties != nil {
		f.properties = make(map[string]*fastSchema, len(s.Properties))
		for name, p := range s.Properties {
			if f.properties[name] = compileFast(p); f.properties[name] == nil {
				return nil
			}
		}
	}
	if ap := s.AdditionalProperties; ap != nil {
		// Validate's test for false, which unmarshals as {"not": {}}.
		if ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero() {
			f.closed = true
		} else if f.additional = compileFast(ap); f.additional == nil {
			return nil
		}
	}
	for _, sub := range s.AnyOf {
		c := compileFast(sub)
		if c == nil {
			return nil
		}
		f.anyOf = append(f.anyOf, c)
	}
	if s.AnyOf != nil && len(f.anyOf) == 0 {
		return nil // an empty anyOf, which Resolve refuses anyway
	}
	return f
}

// accepts reports whether Validate surely accepts v, a value as
// encoding/json decodes JSON into an any.
func (f *fastSchema) accepts(v any) bool {
	jsonType, ok := typeOf(v)
	if !ok {
		return false
	}
	// "number" subsumes integers.
	if f.types != nil && !slices.Contains(f.types, jsonType) &&
		!(jsonType == "integer" && slices.Contains(f.types, "number")) {
		return false
	}
	if f.enum != nil && !slices.ContainsFunc(f.enum, func(e any) bool { return e == v }) {
		// e == v is equalValue for scalars: a float64 compares by value
		// (0 == -0) as big.Rat does, and different kinds never match.
		// A composite v matches no scalar member.
		return false
	}
	switch v := v.(type) {
	case float64:
		// Bounds are float64s too, so comparing them as floats is the
		// exact big.Rat comparison Validate makes (typeOf has declined
		// NaN and the infinities).
		if f.minimum != nil && v < *f.minimum || f.maximum != nil && v > *f.maximum {
			return false
		}
	case string:
		if f.minLength != nil || f.maxLength != nil {
			n := utf8.RuneCountInString(v) // code points, as Validate counts
			if f.minLength != nil && n < *f.minLength || f.maxLength != nil && n > *f.maxLength {
				return false
			}
		}
		// Unanchored, as Validate matches it.
		if f.pattern != nil && !f.pattern.MatchString(v) {
			return false
		}
	case []any:
		if f.minItems != nil && len(v) < *f.minItems || f.maxItems != nil && len(v) > *f.maxItems {
			return false
		}
		if f.items != nil {
			for _, item := range v {
				if !f.items.accepts(item) {
					return false
				}
			}
		}
		if f.uniqueItems && len(v) > 1 && !uniqueScalars(v) {
			return false
		}
	case map[string]any:
		for name, value := range v {
			p, named := f.properties[name]
			switch {
			case named:
				if !p.accepts(value) {
					return false
				}
			case f.closed:
				return false
			case f.additional != nil:
				if !f.additional.accepts(value) {
					return false
				}
			}
		}
		for _, name := range f.required {
			if _, ok := v[name]; !ok {
				return false
			}
		}
	}
	// Validate tries every branch; one that passes is enough.
	return f.anyOf == nil || slices.ContainsFunc(f.anyOf, func(s *fastSchema) bool { return s.accepts(v) })
}

// typeOf is jsonschema-go's jsonType for the values encoding/json decodes
// into an any; ok is false for any other value, which accepts leaves to
// Validate.
func typeOf(v any) (jsonType string, ok bool) {
	switch v := v.(type) {
	case nil:
		return "null", true
	case bool:
		return "boolean", true
	case float64:
		// Validate takes a NaN or an infinity for 0 (big.Rat cannot hold
		// it), which no comparison here would; JSON cannot write either,
		// so leaving them to Validate costs nothing.
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", false
		}
		// As jsonType: a float with no fraction (1.0, 1e300) is an integer.
		if _, frac := math.Modf(v); frac == 0 {
			return "integer", true
		}
		return "number", true
	case string:
		return "string", true
	case []any:
		return "array", true
	case map[string]any:
		return "object", true
	}
	return "", false
}

// scalar reports whether v is a JSON scalar as encoding/json decodes it,
// for which == is jsonschema-go's equalValue. A NaN or an infinity is not
// one: equalValue takes them all for 0, so to it NaN equals NaN, and +Inf
// -Inf.
func scalar(v any) bool {
	switch v := v.(type) {
	case nil, bool, string:
		return true
	case float64:
		return !math.IsNaN(v) && !math.IsInf(v, 0)
	}
	return false
}

// uniqueScalars reports whether items are scalars no two of which are
// equal; false also when one is not a scalar, whose equality Validate
// judges.
func uniqueScalars(items []any) bool {
	seen := make(map[any]bool, len(items))
	for _, item := range items {
		if !scalar(item) || seen[item] {
			return false
		}
		seen[item] = true
	}
	return true
}
