package trackerhttp_test

import (
	"net/url"
	"testing"

	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// TestHostKeyIsOneNameForOneHost: every spelling the guard admits as one
// host shares one per-host cap and breaker; another port is another host.
func TestHostKeyIsOneNameForOneHost(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"https://api.github.com/", "https://API.GitHub.com/", "https://api.github.com./", "https://api.github.com:443/"} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := trackerhttp.HostKey(u); got != "api.github.com:443" {
			t.Errorf("HostKey(%s) = %q, want api.github.com:443", raw, got)
		}
	}
	for raw, want := range map[string]string{"https://ghe.example:8443/api/v3/": "ghe.example:8443", "http://127.0.0.1/": "127.0.0.1:80"} {
		u, _ := url.Parse(raw)
		if got := trackerhttp.HostKey(u); got != want {
			t.Errorf("HostKey(%s) = %q, want %q", raw, got, want)
		}
	}
}
