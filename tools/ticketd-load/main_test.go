package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestCheckTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url         string
		allowRemote bool
		ok          bool
	}{
		{"http://127.0.0.1:8080/mcp", false, true},
		{"http://127.1.2.3/mcp", false, true},
		{"https://localhost:8443/mcp", false, true},
		{"http://LOCALHOST/mcp", false, true},
		{"http://[::1]:8080/mcp", false, true},
		{"http://[::ffff:127.0.0.1]:8080/mcp", false, true},
		{"http://10.0.0.1:8080/mcp", false, false},
		{"http://[2001:db8::1]/mcp", false, false},
		{"http://example.com/mcp", false, false},
		{"http://localhost.example.com/mcp", false, false},
		{"http://127.0.0.1.nip.io/mcp", false, false},
		{"http://0.0.0.0:8080/mcp", false, false},
		{"http://example.com/mcp", true, true},
		{"ftp://127.0.0.1/mcp", false, false},
		{"127.0.0.1:8080", false, false},
		{"http:///mcp", false, false},
	}
	for _, tt := range tests {
		err := checkTarget(tt.url, tt.allowRemote)
		if (err == nil) != tt.ok {
			t.Errorf("checkTarget(%q, allowRemote=%v) = %v, want ok=%v", tt.url, tt.allowRemote, err, tt.ok)
		}
	}
}

// TestURLTakesTheBannersBase checks that -url takes the dev banner's BASE
// (a server with no path) as well as the MCP endpoint itself.
func TestURLTakesTheBannersBase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://127.0.0.1:43117":       "http://127.0.0.1:43117/mcp",
		"http://127.0.0.1:43117/":      "http://127.0.0.1:43117/mcp",
		"http://127.0.0.1:43117/mcp":   "http://127.0.0.1:43117/mcp",
		"http://127.0.0.1:8080/ts/mcp": "http://127.0.0.1:8080/ts/mcp",
	} {
		c, err := parseConfig([]string{"ticketd-load", "-token", "t", "-url", in}, func(string) string { return "" }, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("-url %s: %v", in, err)
		}
		if c.URL != want {
			t.Errorf("-url %s calls %s, want %s", in, c.URL, want)
		}
	}
}

func TestRunRefusesBadFlagsWithoutCalling(t *testing.T) {
	t.Parallel()
	noEnv := func(string) string { return "" }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"remote host", []string{"-token", "t", "-url", "http://192.0.2.1/mcp"}, "not a loopback address"},
		{"no token", []string{}, "no token"},
		{"ratio above 1", []string{"-token", "t", "-retry-ratio", "1.5"}, "-retry-ratio"},
		{"no duration", []string{"-token", "t", "-duration", "0"}, "-duration"},
		{"no workers", []string{"-token", "t", "-workers", "0"}, "-workers"},
		{"stray argument", []string{"-token", "t", "extra"}, "unexpected arguments"},
		{"identical creates with replays", []string{"-token", "t", "-operation-id", "x"}, "-operation-id"},
		{"identical creates in two projects", []string{"-token", "t", "-operation-id", "x", "-retry-ratio", "0", "-project", "a,b"}, "one -project"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"ticketd-load"}, tt.args...), noEnv, &stdout, &stderr)
			var uerr usageError
			if !errors.As(err, &uerr) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run = %v, want a usage error mentioning %q", err, tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestTokenFromEnvironment(t *testing.T) {
	t.Parallel()
	env := func(k string) string {
		if k == "TICKETD_TOKEN" {
			return "from-env"
		}
		return ""
	}
	cfg, err := parseConfig([]string{"ticketd-load"}, env, &bytes.Buffer{})
	if err != nil || cfg.Token != "from-env" {
		t.Fatalf("parseConfig = %+v, %v", cfg, err)
	}
	cfg, err = parseConfig([]string{"ticketd-load", "-token", "flag"}, env, &bytes.Buffer{})
	if err != nil || cfg.Token != "flag" {
		t.Fatalf("the flag must win: %+v, %v", cfg, err)
	}
}
