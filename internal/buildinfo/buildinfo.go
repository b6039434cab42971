// Package buildinfo names the running build, once, for every place that
// reports it (the version command, MCP serverInfo).
package buildinfo

import (
	"runtime/debug"
	"sync"
)

// version is set at build time with
// -ldflags "-X github.com/ticketd/ticketd/internal/buildinfo.version=v1.2.3".
var version string

// Version prefers the -ldflags version, then the module version (set
// by `go install …@version`), then the VCS revision stamped by `go build`.
// It is worked out once: every refusal the MCP edge answers names it
// (serverInfo in _meta), and reading the build info parses the whole
// embedded module list each time (7 % of the server's CPU under a
// refused flood, docs/perf.md).
var Version = sync.OnceValue(readVersion)

func readVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-dirty"
			}
		}
	}
	if revision == "" {
		return "(devel)"
	}
	return revision + modified
}
