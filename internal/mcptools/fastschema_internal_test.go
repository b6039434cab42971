package mcptools

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// syntheticSchemas use the keywords ticketd's input schemas use in ways
// they do not (yet): numbers in enums and bounds, type lists, composite
// items under uniqueItems, additionalProperties with a schema, anyOf at
// the root.
var syntheticSchemas = map[string]string{
	"synthetic_unique":     `{"type":"array","uniqueItems":true}`,
	"synthetic_minimum":    `{"type":"number","minimum":1}`,
	"synthetic_numbers":    `{"type":["integer","null","string"],"minimum":-2,"maximum":2.5,"enum":[-0,1,2,2.5,null,"x",true]}`,
	"synthetic_additional": `{"type":"object","properties":{"a":{"type":"number"}},"additionalProperties":{"type":"string","maxLength":2,"pattern":"b"},"required":["a"]}`,
	"synthetic_anyof":      `{"anyOf":[{"type":"string","minLength":3},{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}]}`,
}

// fastSubjects are every registered tool's arguments, as the tool reads
// them, and the synthetic schemas'.
func fastSubjects(tb testing.TB) map[string]arguments {
	tb.Helper()
	subjects := make(map[string]arguments)
	for _, tool := range Tools() {
		schema, err := json.Marshal(tool.Def().InputSchema)
		if err != nil {
			tb.Fatal(err)
		}
		subjects[tool.Name] = newArguments(tool.Name, schema)
	}
	for name, schema := range syntheticSchemas {
		subjects[name] = newArguments(name, []byte(schema))
	}
	return subjects
}

// fastSeeds are the instances the deterministic test judges and the fuzz
// test starts from: TestArgumentsAreReadAsTheSDKReadsThem's payloads, and
// a valid payload with each property set in turn to values at and around
// its schema's limits (boundaryValues), or to an extra property.
func fastSeeds(tb testing.TB, tool string, a arguments) []string {
	tb.Helper()
	seeds := append(slices.Clone(argumentCorpus), toolArguments[tool]...)
	seeds = append(seeds, `[]`, `1`, `"x"`, `true`, `[1,1.0]`, `[0,-0]`, `[null,null]`, `[[1],[1]]`, `[[1],[2]]`,
		`[{"a":1},{"a":1.0}]`, `[{"a":1},{"a":2}]`, `[true,false]`, `["ab"]`, `"abc"`, `[true,true,true]`, `{"a":1,"b":"b"}`,
		`{"a":1,"b":"bb"}`, `{"a":1,"b":"bbb"}`, `{"a":1,"b":"xb\n"}`, `{"a":1,"b":1}`, `{"b":"b"}`, `2.5`, `3`, `-2`, `-3`, `-0`)
	base := map[string]any{}
	for _, raw := range seeds {
		var m map[string]any
		if json.Unmarshal([]byte(raw), &m) == nil && m != nil && validates(a, m) {
			base = m
			break
		}
	}
	root := a.schema.Schema()
	for _, name := range slices.Sorted(maps.Keys(root.Properties)) {
		for _, v := range boundaryValues(root.Properties[name]) {
			seeds = append(seeds, encode(tb, with(base, name, v)))
		}
	}
	return append(seeds, encode(tb, with(base, "zzz", "x")), encode(tb, with(base, "", nil)))
}

// boundaryValues are values of every JSON type, and values at, just
// inside and just outside each limit s states, in one-, two- and
// four-byte runes for lengths, as a property's value or an item or
// member of one.
func boundaryValues(s *jsonschema.Schema) []any {
	vs := []any{nil, true, false, 0.0, 1.0, -1.0, 0.5, 1e300, "", "x", []any{}, map[string]any{}}
	for _, limit := range []*int{s.MinLength, s.MaxLength} {
		for n := range 3 {
			if limit != nil && *limit-1+n >= 0 {
				for _, r := range []string{"x", "é", "🔥"} {
					vs = append(vs, strings.Repeat(r, *limit-1+n))
				}
			}
		}
	}
	for _, bound := range []*float64{s.Minimum, s.Maximum} {
		if bound != nil {
			vs = append(vs, *bound-1, *bound-0.5, *bound, *bound+0.5, *bound+1)
		}
	}
	for _, e := range s.Enum {
		vs = append(vs, e)
		if str, ok := e.(string); ok {
			vs = append(vs, strings.ToUpper(str), str+" ", []any{str})
		}
	}
	if s.Items != nil {
		for _, item := range boundaryValues(s.Items) {
			vs = append(vs, []any{item}, []any{item, item})
		}
		for _, limit := range []*int{s.MinItems, s.MaxItems} {
			for n := range 3 {
				if limit != nil && *limit-1+n >= 0 {
					vs = append(vs, distinctItems(s.Items, *limit-1+n))
				}
			}
		}
	}
	if ap := s.AdditionalProperties; ap != nil && ap.Not == nil {
		for _, v := range boundaryValues(ap) {
			vs = append(vs, map[string]any{"SUP-1": v}, map[string]any{"SUP-1": 1.0, "SUP-2": v})
		}
	}
	for _, sub := range s.AnyOf {
		vs = append(vs, boundaryValues(sub)...)
	}
	return vs
}

// distinctItems is an array of n different items that fit item, as far
// as its enum allows.
func distinctItems(item *jsonschema.Schema, n int) []any {
	items := make([]any, n)
	for i := range items {
		items[i] = fmt.Sprint("l", i)
		if len(item.Enum) > 0 {
			items[i] = item.Enum[i%len(item.Enum)]
		}
	}
	return items
}

func with(base map[string]any, name string, v any) map[string]any {
	m := maps.Clone(base)
	m[name] = v
	return m
}

func encode(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

func validates(a arguments, instance any) bool {
	return a.schema.Validate(&instance) == nil
}

// instance is raw as check sees it: decoded by encoding/json (missing
// arguments are {}), with the defaults it lacks.
func instance(a arguments, raw string) (any, bool) {
	var v any = map[string]any{}
	if raw != "" && json.Unmarshal([]byte(raw), &v) != nil {
		return nil, false
	}
	if m, ok := v.(map[string]any); ok {
		for _, d := range a.defaulted {
			if _, ok := m[d.name]; !ok {
				m[d.name] = d.value
			}
		}
	}
	return v, true
}

// TestFastValidatorAcceptsOnlyWhatValidateAccepts judges every seed with
// both validators: the fast one must never accept what Validate refuses,
// and, for ticketd's tools, must accept everything Validate accepts, or
// it only adds cost.
func TestFastValidatorAcceptsOnlyWhatValidateAccepts(t *testing.T) {
	t.Parallel()
	subjects := fastSubjects(t)
	for _, tool := range []string{ToolCreateTicket, ToolUpdateTicket, ToolListTickets} {
		if subjects[tool].fast == nil {
			t.Errorf("%s has no fast validator", tool)
		}
	}
	for name, a := range subjects {
		if a.fast == nil {
			t.Logf("%s has no fast validator", name)
			continue
		}
		_, synthetic := syntheticSchemas[name]
		accepted, refused := 0, 0
		for _, raw := range fastSeeds(t, name, a) {
			v, ok := instance(a, raw)
			if !ok {
				continue
			}
			fast, valid := a.fast.accepts(v), validates(a, v)
			switch {
			case fast && !valid:
				t.Errorf("%s: fast validator accepts %s, Validate refuses it", name, raw)
			case valid && !fast && !synthetic:
				t.Errorf("%s: fast validator leaves valid %s to Validate", name, raw)
			}
			if valid {
				accepted++
			} else {
				refused++
			}
		}
		if accepted == 0 || refused == 0 {
			t.Errorf("%s: %d seeds valid, %d invalid: the seeds judge nothing", name, accepted, refused)
		}
	}
}

// FuzzFastValidatorAgreesWithJSONSchema checks, for any JSON instance and
// any of the subjects' schemas, that the fast validator accepts it only
// if Validate does. Run it with
//
//	go test -run '^$' -fuzz FuzzFastValidatorAgreesWithJSONSchema -fuzztime 5m -parallel 1 ./internal/mcptools/
func FuzzFastValidatorAgreesWithJSONSchema(f *testing.F) {
	subjects := fastSubjects(f)
	names := slices.Sorted(maps.Keys(subjects))
	for i, name := range names {
		if subjects[name].fast == nil {
			continue
		}
		for _, raw := range fastSeeds(f, name, subjects[name]) {
			f.Add(uint8(i), raw)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw string) {
		name := names[int(which)%len(names)]
		a := subjects[name]
		if a.fast == nil {
			return
		}
		v, ok := instance(a, raw)
		if ok && a.fast.accepts(v) && !validates(a, v) {
			t.Fatalf("%s: fast validator accepts %s, Validate refuses it: %v", name, raw, a.schema.Validate(&v))
		}
	})
}

// TestFastValidatorLeavesNonFiniteNumbersToValidate: JSON cannot write a
// NaN or an infinity, but Validate would take one for 0, which no bound or
// equality of the fast check does; the check must leave them to Validate.
func TestFastValidatorLeavesNonFiniteNumbersToValidate(t *testing.T) {
	t.Parallel()
	subjects := fastSubjects(t)
	for name, instances := range map[string][]any{
		"synthetic_minimum": {math.NaN(), math.Inf(-1)},
		"synthetic_unique":  {[]any{math.NaN(), math.NaN()}, []any{math.Inf(1), math.Inf(-1)}},
	} {
		for _, v := range instances {
			if subjects[name].fast.accepts(v) {
				t.Errorf("%s: fast validator accepts %v", name, v)
			}
		}
	}
}
