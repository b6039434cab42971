package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/ticketd/ticketd/internal/mcpedge"
	"github.com/ticketd/ticketd/internal/server"
)

// serverJSON is the part of server.json the agreement checks read.
type serverJSON struct {
	Schema     string `json:"$schema"`
	Name       string `json:"name"`
	Title      string `json:"title"`
	Version    string `json:"version"`
	Repository struct {
		URL string `json:"url"`
	} `json:"repository"`
	Packages []struct {
		RegistryType     string            `json:"registryType"`
		Identifier       string            `json:"identifier"`
		RuntimeArguments []runtimeArgument `json:"runtimeArguments"`
		Transport        struct {
			Type string `json:"type"`
			URL  string `json:"url"`
		} `json:"transport"`
		EnvironmentVariables []struct {
			Name string `json:"name"`
		} `json:"environmentVariables"`
	} `json:"packages"`
}

type runtimeArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// TestServerJSON validates server.json (the MCP Registry entry) against the
// registry's schema vendored in docs/registry, and checks that what it tells
// a client agrees with the code: the name the image's label carries and the
// module path implies, the title initialize reports, the image the Makefile
// pushes under the entry's version, the port the image listens on and the
// MCP path, and settings that exist.
func TestServerJSON(t *testing.T) {
	t.Parallel()
	schemaBytes := readRepoFile(t, "docs/registry/server.schema.json")
	raw := readRepoFile(t, "server.json")

	sum := sha256.Sum256(schemaBytes)
	if readme := string(readRepoFile(t, "docs/registry/README.md")); !strings.Contains(readme, hex.EncodeToString(sum[:])) {
		t.Errorf("docs/registry/README.md does not name the vendored schema's sha256 %x: edited, or replaced without updating its source", sum)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(schemaBytes, &schema); err != nil {
		t.Fatalf("the vendored schema: %v", err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("resolving the vendored schema: %v", err)
	}
	var instance map[string]any
	if err := json.Unmarshal(raw, &instance); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	if err := resolved.Validate(instance); err != nil {
		t.Errorf("server.json does not match the registry's schema: %v", err)
	}
	// The validator bites: entries the registry refuses are refused here too.
	for name, mutate := range map[string]func(map[string]any){
		"description over 100 characters": func(m map[string]any) { m["description"] = strings.Repeat("x", 101) },
		"name without a namespace":        func(m map[string]any) { m["name"] = "ticketd" },
		"package without a transport": func(m map[string]any) {
			delete(m["packages"].([]any)[0].(map[string]any), "transport")
		},
	} {
		var bad map[string]any
		if err := json.Unmarshal(raw, &bad); err != nil {
			t.Fatal(err)
		}
		mutate(bad)
		if resolved.Validate(bad) == nil {
			t.Errorf("the schema accepts server.json with a %s", name)
		}
	}

	var doc serverJSON
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("server.json: %v", err)
	}
	if doc.Schema != schema.ID {
		t.Errorf("$schema = %q, want the vendored schema's $id %q", doc.Schema, schema.ID)
	}

	module := submatch(t, "go.mod", `(?m)^module github\.com/([^/\s]+)/([^/\s]+)$`)
	if want := "io.github." + module[1] + "/" + module[2]; doc.Name != want {
		t.Errorf("name = %q, want %q (the namespace GitHub sign-in proves for github.com/%s)", doc.Name, want, module[1])
	}
	if want := "https://github.com/" + module[1] + "/" + module[2]; doc.Repository.URL != want {
		t.Errorf("repository.url = %q, want %q", doc.Repository.URL, want)
	}
	if label := submatch(t, "deploy/image/Containerfile", `(?m)^LABEL io\.modelcontextprotocol\.server\.name="([^"]+)"$`)[1]; label != doc.Name {
		t.Errorf("the image's io.modelcontextprotocol.server.name label is %q, server.json's name %q: the registry refuses the image", label, doc.Name)
	}
	if want := mcpedge.ServerInfo().Title; doc.Title != want {
		t.Errorf("title = %q, want %q (what initialize reports)", doc.Title, want)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(doc.Version) {
		t.Errorf("version = %q, want one release, MAJOR.MINOR.PATCH", doc.Version)
	}

	if len(doc.Packages) != 1 || doc.Packages[0].RegistryType != "oci" {
		t.Fatalf("packages = %+v, want the one OCI image", doc.Packages)
	}
	pkg := doc.Packages[0]
	repo := submatch(t, "Makefile", `(?m)^IMAGE_REPO\s*\?=\s*(\S+)$`)[1]
	if want := repo + ":" + doc.Version; pkg.Identifier != want {
		t.Errorf("identifier = %q, want %q (the Makefile's IMAGE_REPO at the entry's version)", pkg.Identifier, want)
	}
	port := submatch(t, "deploy/image/Containerfile", `TICKETD_ADDR=0\.0\.0\.0:(\d+)`)[1]
	if want := "http://localhost:" + port + server.MCPPath; pkg.Transport.Type != "streamable-http" || pkg.Transport.URL != want {
		t.Errorf("transport = %+v, want streamable-http at %s (the image's port, the MCP path)", pkg.Transport, want)
	}
	if !slices.ContainsFunc(pkg.RuntimeArguments, func(a runtimeArgument) bool {
		return a.Name == "--publish" && strings.HasSuffix(a.Value, ":"+port+":"+port)
	}) {
		t.Errorf("runtimeArguments %+v do not publish the image's port %s", pkg.RuntimeArguments, port)
	}
	for _, v := range pkg.EnvironmentVariables {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.env == v.Name }) {
			t.Errorf("environment variable %s is no ticketd setting", v.Name)
		}
	}
}

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile("../../" + path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func submatch(t *testing.T, path, pattern string) []string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(string(readRepoFile(t, path)))
	if m == nil {
		t.Fatalf("%s has no match for %s", path, pattern)
	}
	return m
}
