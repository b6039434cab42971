package rest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/ticketd/ticketd/internal/errcode"
)

// openAPIStored describes every route in routes.go: the paths and prose by
// hand, the schemas generated from the Go types (TestOpenAPIIsGenerated).
// It holds no error codes: openAPIDocument adds them from errcode.Table, so
// a new code is served without touching this file.
//
//go:embed openapi.json
var openAPIStored []byte

// openAPIDocument is the document as served: the stored one with the
// problem's code vocabulary from errcode.Table.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openAPIStored, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	problem, _ := schemas["Problem"].(map[string]any)
	props, _ := problem["properties"].(map[string]any)
	code, ok := props["code"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("openapi.json: no components.schemas.Problem.properties.code")
	}
	code["enum"] = errcode.Codes()
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode openapi.json: %w", err)
	}
	return append(out, '\n'), nil
}

// serveOpenAPI serves doc, the OpenAPI document. It needs no token: it
// describes the API, not anyone's data.
func serveOpenAPI(doc []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(doc)
	}
}
