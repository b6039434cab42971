package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
)

// TestOriginRefusalsAreCounted: a request from a foreign Origin, refused
// with 403 before authentication, and one with two Authorization headers,
// refused with 400, are counted in ticketd_requests_total on both
// transports (their codes on /mcp, their statuses on /api/v1), as every
// other answer is, so a browser attack or a confused proxy shows on the
// dashboard.
func TestOriginRefusalsAreCounted(t *testing.T) {
	t.Parallel()
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{})
	env.SeedProject(t, "acme")
	token := env.Token(t, "acme", authn.ScopeRead)
	before, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	foreign := http.Header{"Origin": {"https://evil.example"}}
	if status, _, _ := rpc(t, env, token, legacy, callBody(mcptools.ToolListProjects, `{}`), foreign); status != http.StatusForbidden {
		t.Fatalf("/mcp from a foreign Origin: %d, want 403", status)
	}
	req, _ := http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Origin", "https://evil.example")
	if resp, body := do(t, req); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "forbidden") {
		t.Fatalf("/api/v1 from a foreign Origin: %d %s, want 403", resp.StatusCode, body)
	}
	twice := http.Header{"Authorization": {"Bearer " + token, "Bearer " + token}}
	if status, _, _ := rpc(t, env, token, legacy, callBody(mcptools.ToolListProjects, `{}`), twice); status != http.StatusBadRequest {
		t.Fatalf("/mcp with two Authorization headers: %d, want 400", status)
	}
	req, _ = http.NewRequest(http.MethodGet, env.URL+"/api/v1/projects", nil)
	req.Header["Authorization"] = twice["Authorization"]
	if resp, body := do(t, req); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("/api/v1 with two Authorization headers: %d %s, want 400", resp.StatusCode, body)
	}
	after, err := scrapeMetrics(env.URL)
	if err != nil {
		t.Fatal(err)
	}
	for sample, want := range map[string]float64{
		requestsSample("mcp", "unmatched", "forbidden"):       1,
		requestsSample("rest", "unmatched", "403"):            1,
		requestsSample("mcp", "unmatched", "unauthenticated"): 1,
		requestsSample("rest", "unmatched", "400"):            1,
	} {
		if got := after[sample] - before[sample]; got != want {
			t.Errorf("%s moved by %v, want %v", sample, got, want)
		}
	}
}
