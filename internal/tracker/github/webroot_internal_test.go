package github

import (
	"net/url"
	"testing"
)

// TestWebRoot: the host a person reads issues on, derived from the API root.
func TestWebRoot(t *testing.T) {
	t.Parallel()
	for api, want := range map[string]string{
		"https://api.github.com/":                "https://github.com",
		"https://ghe.example.com/api/v3/":        "https://ghe.example.com",
		"https://api.ghe.example.com/api/v3/":    "https://api.ghe.example.com",
		"https://api.example.com:8443/":          "https://example.com:8443",
		"http://127.0.0.1:4000/":                 "https://127.0.0.1:4000",
		"https://github.internal.example/proxy/": "https://github.internal.example",
	} {
		u, err := url.Parse(api)
		if err != nil {
			t.Fatal(err)
		}
		if got := webRoot(u); got != want {
			t.Errorf("webRoot(%s) = %s, want %s", api, got, want)
		}
	}
}

// TestHostKeyIsOneNameForOneHost: every spelling the guard admits as one
// host shares one per-host cap and breaker; another port is another host.
func TestHostKeyIsOneNameForOneHost(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"https://api.github.com/", "https://API.GitHub.com/", "https://api.github.com./", "https://api.github.com:443/"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostKey(u); got != "api.github.com:443" {
			t.Errorf("hostKey(%s) = %q, want api.github.com:443", raw, got)
		}
	}
	for raw, want := range map[string]string{"https://ghe.example:8443/api/v3/": "ghe.example:8443", "http://127.0.0.1/": "127.0.0.1:80"} {
		u, _ := url.Parse(raw)
		if got := hostKey(u); got != want {
			t.Errorf("hostKey(%s) = %q, want %q", raw, got, want)
		}
	}
}
