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
