package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
)

// decodeJSON reads r's body into dst, a pointer to a struct, strictly: the
// media type must be application/json, the body one JSON object of at most
// tickets.MaxInputBytes bytes, valid UTF-8, with no trailing data, no
// duplicate or unknown members (names match exactly, not case-insensitively
// as encoding/json would), and never a tenant_id, because the tenant comes only from the
// token. Strictness makes a client's mistake a 4xx instead of a silently
// different ticket.
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, tickets.MaxInputBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return &statusError{http.StatusRequestEntityTooLarge,
			invalid("body", fmt.Sprintf("must be at most %d bytes", tickets.MaxInputBytes))}
	case err != nil:
		return fmt.Errorf("%w: read body: %v", tickets.ErrInvalid, err)
	case len(bytes.TrimSpace(body)) == 0:
		return invalid("body", "must be a JSON object, got an empty body")
	case !utf8.Valid(body):
		return invalid("body", "must be valid UTF-8")
	}
	if err := checkMembers(body, jsonNames(dst)); err != nil {
		return err
	}
	if err := json.Unmarshal(body, dst); err != nil {
		var typeErr *json.UnmarshalTypeError
		var invalidErr *tickets.ValidationError
		if errors.As(err, &invalidErr) {
			return invalidErr // a nested object's own check (backendBody)
		}
		if errors.As(err, &typeErr) {
			return invalid(typeErr.Field, "must be a JSON "+jsonKind(typeErr.Type)+", got "+typeErr.Value)
		}
		return invalid("body", "is not valid JSON: "+err.Error())
	}
	return nil
}

// checkContentType accepts application/json with an optional UTF-8 charset.
func checkContentType(header string) error {
	unsupported := func(msg string) error {
		return &statusError{http.StatusUnsupportedMediaType, invalid("Content-Type", msg)}
	}
	if header == "" {
		return unsupported("is required and must be application/json")
	}
	mediaType, params, err := mime.ParseMediaType(header)
	if err != nil || mediaType != "application/json" {
		return unsupported(fmt.Sprintf("must be application/json, got %q", header))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return unsupported(fmt.Sprintf("charset must be utf-8, got %q", cs))
	}
	return nil
}

// checkMembers walks the top level of body: it must be a single object whose
// member names are all in known, each once. Every offending member is
// reported, so one round trip shows all of them.
func checkMembers(body []byte, known map[string]bool) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	syntax := func(err error) error {
		return invalid("body", fmt.Sprintf("is not valid JSON (at byte %d): %v", dec.InputOffset(), err))
	}
	if tok, err := dec.Token(); err != nil {
		return syntax(err)
	} else if tok != json.Delim('{') {
		return invalid("body", "must be a JSON object")
	}
	seen := map[string]bool{}
	var fields []tickets.FieldError
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		name, _ := tok.(string)
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return syntax(err)
		}
		switch {
		case strings.EqualFold(name, "tenant_id"):
			fields = append(fields, tickets.FieldError{Field: name,
				Message: "is not accepted: the tenant comes from your token and cannot be set in a request"})
		case !known[name]:
			fields = append(fields, tickets.FieldError{Field: name, Message: "is not a known field" + knownList(known)})
		case seen[name]:
			fields = append(fields, tickets.FieldError{Field: name, Message: "appears more than once"})
		case bytes.Equal(bytes.TrimSpace(value), []byte("null")) && name != "parent":
			// MCP's schemas refuse null too: one intent, one answer on both
			// transports, rather than a null that silently means "unchanged".
			// parent alone takes null, which detaches on both.
			fields = append(fields, tickets.FieldError{Field: name,
				Message: "must not be null; leave the field out to keep its value (an empty assignee unassigns)"})
		}
		seen[name] = true
	}
	if _, err := dec.Token(); err != nil {
		return syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body", "must hold one JSON object and nothing after it")
	}
	if len(fields) > 0 {
		return &tickets.ValidationError{Fields: fields}
	}
	return nil
}

func knownList(known map[string]bool) string {
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

// jsonNames returns the members of the JSON Schema of the struct dst points
// to: the same schema the MCP tools and the OpenAPI document state, so the
// body accepts exactly what they document (embedded fields included).
func jsonNames(dst any) map[string]bool {
	s, err := jsonschema.ForType(reflect.TypeOf(dst).Elem(), nil)
	if err != nil {
		panic(fmt.Sprintf("infer schema for %T: %v", dst, err)) // a programming error, caught by every test
	}
	names := make(map[string]bool, len(s.Properties))
	for name := range s.Properties {
		names[name] = true
	}
	return names
}

// jsonKind names the JSON type a Go type decodes from, for error messages.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Bool:
		return "boolean"
	case reflect.Struct, reflect.Map:
		return "object"
	default:
		return "number"
	}
}

// queryParams returns r's query parameters after checking that each is one
// of allowed and given at most once, so a misspelt filter is an error rather
// than a silently unfiltered list.
func queryParams(r *http.Request, allowed ...string) (url.Values, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalid("query", "is malformed: "+err.Error())
	}
	var fields []tickets.FieldError
	for name, values := range q {
		switch {
		case !slices.Contains(allowed, name):
			fields = append(fields, tickets.FieldError{Field: name,
				Message: "is not a known query parameter (known: " + strings.Join(allowed, ", ") + ")"})
		case len(values) > 1:
			fields = append(fields, tickets.FieldError{Field: name, Message: "must be given at most once"})
		}
	}
	if len(fields) > 0 {
		return nil, &tickets.ValidationError{Fields: fields}
	}
	return q, nil
}

// pageParams checks a list's query parameters (filters, limit and cursor)
// and parses its limit.
func pageParams(r *http.Request, filters ...string) (url.Values, int, error) {
	q, err := queryParams(r, append(filters, "limit", "cursor")...)
	if err != nil {
		return nil, 0, err
	}
	limit, err := pageLimit(q)
	return q, limit, err
}

// pageLimit parses the limit parameter; 0 (absent) leaves the service's
// default, and its range is the service's to check.
func pageLimit(q url.Values) (int, error) {
	s := q.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, invalid("limit", fmt.Sprintf("must be an integer from 1 to %d, got %q", tickets.MaxLimit, s))
	}
	return n, nil
}

// idempotencyKey returns the operation ID a POST carries in its
// Idempotency-Key header, either bare or as an RFC 8941 structured-field
// string ("…"). It must be a UUID of version 4 or 7, as operation IDs are.
func idempotencyKey(h http.Header) (operations.ID, error) {
	const field = "Idempotency-Key"
	values := h.Values(field)
	switch {
	case len(values) == 0 || strings.TrimSpace(values[0]) == "":
		return operations.ID{}, invalid(field, "is required: send a fresh UUID (v4 or v7) per intended ticket and reuse it on every retry")
	case len(values) > 1:
		return operations.ID{}, invalid(field, "must be given once")
	}
	key := strings.TrimSpace(values[0])
	if strings.HasPrefix(key, `"`) {
		s, err := sfString(key)
		if err != nil {
			return operations.ID{}, invalid(field, err.Error())
		}
		key = s
	}
	id, err := operations.ParseID(key)
	var bad *operations.IDError
	if errors.As(err, &bad) {
		return operations.ID{}, invalid(field, bad.Reason)
	}
	if err != nil {
		return operations.ID{}, fmt.Errorf("parse %s: %w", field, err)
	}
	return id, nil
}

// sfString parses an RFC 8941 §3.3.3 sf-string that makes up the whole
// value (parameters are not accepted).
func sfString(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", errors.New(`is a malformed structured-field string: only \" and \\ may be escaped`)
			}
			b.WriteByte(v[i])
		case c == '"':
			if i != len(v)-1 {
				return "", errors.New("is a malformed structured-field string: nothing may follow the closing quote")
			}
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", errors.New("is a malformed structured-field string: only printable ASCII is allowed")
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("is a malformed structured-field string: the closing quote is missing")
}
