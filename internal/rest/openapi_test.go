package rest_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/errcode"
	"github.com/ticketd/ticketd/internal/errcode/errcodetest"
	"github.com/ticketd/ticketd/internal/rest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// loadOpenAPI parses the document the router embeds.
func loadOpenAPI(tb testing.TB) map[string]any {
	tb.Helper()
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)

	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		t.Errorf("openapi = %q, want 3.1.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Errorf("info = %v, want title and version", info)
	}
	t.Run("EveryRefResolves", func(t *testing.T) {
		walkJSON(doc, func(node map[string]any) {
			ref, ok := node["$ref"].(string)
			if !ok {
				return
			}
			if _, err := resolvePointer(doc, ref); err != "" {
				t.Errorf("$ref %q: %s", ref, err)
			}
		})
	})
	t.Run("EveryOperationIsComplete", func(t *testing.T) {
		ids := map[string]bool{}
		paths, _ := doc["paths"].(map[string]any)
		for path, item := range paths {
			item, _ := item.(map[string]any)
			declared := map[string]bool{}
			for _, p := range params(t, doc, item["parameters"]) {
				declared[p] = true
			}
			for _, m := range httpMethods {
				op, ok := item[m].(map[string]any)
				if !ok {
					continue
				}
				id, _ := op["operationId"].(string)
				if id == "" || ids[id] {
					t.Errorf("%s %s: operationId %q missing or duplicated", m, path, id)
				}
				ids[id] = true
				responses, _ := op["responses"].(map[string]any)
				if len(responses) == 0 {
					t.Errorf("%s %s has no responses", m, path)
				}
				for code, r := range responses {
					r, _ := deref(doc, r).(map[string]any)
					if r["description"] == nil {
						t.Errorf("%s %s response %s has no description", m, path, code)
					}
				}
				pathParams := maps.Clone(declared)
				for _, p := range params(t, doc, op["parameters"]) {
					pathParams[p] = true
				}
				for _, name := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(path, -1) {
					if !pathParams["path:"+name[1]] {
						t.Errorf("%s %s: path parameter %s is not declared", m, path, name[1])
					}
				}
			}
		}
	})
	t.Run("SchemasMatchTheWireTypes", func(t *testing.T) {
		for schema, v := range map[string]any{
			"Ticket": contract.Ticket{}, "Project": contract.Project{}, "OperationStatus": contract.OperationStatus{},
		} {
			s, _ := deref(doc, map[string]any{"$ref": "#/components/schemas/" + schema}).(map[string]any)
			props, _ := s["properties"].(map[string]any)
			got := slices.Sorted(maps.Keys(props))
			if want := jsonFields(reflect.TypeOf(v)); !slices.Equal(got, want) {
				t.Errorf("schema %s has properties %v, want %v", schema, got, want)
			}
		}
	})
}

func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, dbtest.SQLite(t))
	doc := loadOpenAPI(t)

	described := map[string]bool{}
	paths, _ := doc["paths"].(map[string]any)
	for path, item := range paths {
		item, _ := item.(map[string]any)
		for _, m := range httpMethods {
			if item[m] != nil {
				described[strings.ToUpper(m)+" "+path] = true
			}
		}
	}
	routed := map[string]bool{}
	hooks, err := webhooks.New(dbtest.SQLite(t), webhooks.Options{})
	if err != nil {
		t.Fatal(err)
	}
	router, ok := rest.NewRouter(rest.Config{Service: e.svc, Verifier: verifier(t), Webhooks: hooks}).(chi.Routes)
	if !ok {
		t.Fatal("NewRouter does not return chi.Routes")
	}
	err = chi.Walk(router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		routed[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range routed {
		if !described[r] {
			t.Errorf("route %s is not described in openapi.json", r)
		}
	}
	for d := range described {
		if !routed[d] {
			t.Errorf("openapi.json describes %s, which is not routed", d)
		}
	}
	if len(routed) != 28 {
		t.Errorf("%d routes, want the 12 ticket routes, the bulk update, the 2 link routes, the 3 user routes, the 6 webhook routes, the 2 operator routes and the 2 approval routes of docs/contract.md#rest: %v", len(routed), slices.Sorted(maps.Keys(routed)))
	}

	t.Run("ServedDocumentIsTheEmbeddedOneWithTheTablesCodes", func(t *testing.T) {
		r := do(t, e, req{path: "/api/v1/openapi.json"})
		var served map[string]any
		if err := json.Unmarshal(r.body, &served); r.status != http.StatusOK || err != nil {
			t.Fatalf("GET /api/v1/openapi.json = %d, %v", r.status, err)
		}
		want := loadOpenAPI(t)
		code := want["components"].(map[string]any)["schemas"].(map[string]any)["Problem"].(map[string]any)["properties"].(map[string]any)["code"].(map[string]any)
		enum := []any{}
		for _, c := range errcode.Codes() {
			enum = append(enum, c)
		}
		// errcodetest's made-up code among them: a new row is served with
		// no edit to openapi.json.
		code["enum"] = enum
		if !reflect.DeepEqual(served, want) {
			t.Errorf("GET /api/v1/openapi.json differs from openapi.json with errcode.Table's codes; served code = %v", served["components"].(map[string]any)["schemas"].(map[string]any)["Problem"].(map[string]any)["properties"].(map[string]any)["code"])
		}
		if !slices.Contains(enum, any(string(errcodetest.MadeUp.Code))) {
			t.Errorf("the codes %v lack errcodetest's made-up one", enum)
		}
	})
}

// params returns the "in:name" of each parameter in list, resolving $refs.
func params(tb testing.TB, doc map[string]any, list any) []string {
	tb.Helper()
	items, _ := list.([]any)
	var out []string
	for _, p := range items {
		p, _ := deref(doc, p).(map[string]any)
		in, _ := p["in"].(string)
		name, _ := p["name"].(string)
		if in == "" || name == "" || p["schema"] == nil {
			tb.Errorf("parameter %v lacks in, name or schema", p)
		}
		out = append(out, in+":"+name)
	}
	return out
}

func deref(doc map[string]any, v any) any {
	if m, ok := v.(map[string]any); ok {
		if ref, ok := m["$ref"].(string); ok {
			target, _ := resolvePointer(doc, ref)
			return target
		}
	}
	return v
}

// resolvePointer follows a local JSON pointer ref (RFC 6901) in doc; the
// string is why it failed, or empty.
func resolvePointer(doc map[string]any, ref string) (any, string) {
	if !strings.HasPrefix(ref, "#/") {
		return nil, "not a local reference"
	}
	var cur any = doc
	for _, tok := range strings.Split(ref[2:], "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, "cannot descend into " + tok
		}
		if cur, ok = m[tok]; !ok {
			return nil, "no member " + tok
		}
	}
	return cur, ""
}

// walkJSON calls f on every object in v.
func walkJSON(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, c := range v {
			walkJSON(c, f)
		}
	case []any:
		for _, c := range v {
			walkJSON(c, f)
		}
	}
}

func jsonFields(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
