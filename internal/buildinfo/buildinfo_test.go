package buildinfo

import "testing"

func TestVersionIsReadOnce(t *testing.T) {
	want := readVersion()
	if got := Version(); got != want {
		t.Fatalf("Version() = %q, want %q", got, want)
	}
	// Every MCP refusal names the version: once read, it costs nothing.
	if allocs := testing.AllocsPerRun(100, func() { _ = Version() }); allocs != 0 {
		t.Errorf("Version() allocates %v times per call after the first; want 0 (the build info is parsed again)", allocs)
	}
}
