package rest

import (
	_ "embed"
	"net/http"
)

// openAPI describes every route in routes.go. It is served as stored, so
// what clients read is exactly what TestOpenAPI checks.
//
//go:embed openapi.json
var openAPI []byte

// serveOpenAPI serves the OpenAPI document. It needs no token: it describes
// the API, not anyone's data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPI)
}
