package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestKill9BetweenSendAndRecordSettlesWithoutASecondIssue runs the built
// binary against the GitHub-shaped server: a create reaches the tracker,
// which files the issue and holds its answer; ticketd is killed with
// SIGKILL before it records anything. The restarted ticketd's
// reconciliation job finds the issue by its marker and settles the
// operation with it: one create request, one issue, and a retry replays it.
func TestKill9BetweenSendAndRecordSettlesWithoutASecondIssue(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.PostgresURL(t)
	bin := filepath.Join(t.TempDir(), "ticketd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	gh := githubtest.New("ghp_kill9")
	apiURL := githubtest.Start(t, gh)
	gh.FailCreates(githubtest.HangAfterCreate)

	addr := freeAddr(t)
	const issuer = "https://issuer.test"
	env := []string{
		"TICKETD_DATABASE_URL=" + rawURL, "TICKETD_JWT_ISSUER=" + issuer, "TICKETD_JWT_HS256_SECRET=" + testSecret,
		"TICKETD_LOG_LEVEL=warn", "GH_TOKEN_KILL9=ghp_kill9",
		// Short windows so the test runs in seconds: the lease a killed
		// holder leaves is six tracker timeouts.
		"TICKETD_RECONCILE_SETTLE=1s", "TICKETD_TRACKER_TIMEOUT=2s",
	}
	base := "http://" + addr
	token, err := authn.MintHS256([]byte(testSecret), authn.TokenRequest{
		Issuer: issuer, Audience: base + "/mcp", Tenant: "acme", Subject: "ops",
		Scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin}, TTL: time.Hour,
	}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	first := startBinary(t, bin, addr, env)
	api(t, "POST", base+"/api/v1/projects", token, map[string]any{"id": "widgets", "key": "WID", "name": "Widgets",
		"backend": map[string]any{"kind": "github", "repository": "acme/widgets", "api_url": apiURL, "token_env": "GH_TOKEN_KILL9"}},
		http.StatusCreated, nil)
	key := uuid.NewString()
	go func() {
		// Its answer never comes: ticketd dies first.
		body, _ := json.Marshal(map[string]any{"project_id": "widgets", "title": "Widget jams"})
		req, _ := http.NewRequest("POST", base+"/api/v1/tickets", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
	waitFor(t, func() bool { return len(gh.Issues("acme/widgets")) == 1 })
	first.kill9(t)

	second := startBinary(t, bin, addr, env)
	var st struct {
		Status     string `json:"status"`
		Downstream struct {
			Status     string `json:"status"`
			Attempts   int    `json:"attempts"`
			ExternalID string `json:"external_id"`
		} `json:"downstream"`
		History []struct {
			Kind string `json:"kind"`
		} `json:"history"`
	}
	defer func() {
		if t.Failed() {
			t.Logf("status %+v\nfirst ticketd:\n%s\nsecond ticketd:\n%s", st, first.stderr.String(), second.stderr.String())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		api(t, "GET", base+"/api/v1/operations/"+key, token, nil, http.StatusOK, &st)
		if st.Status == "succeeded" {
			break
		}
		if st.Status != "pending" && st.Status != "unknown" {
			t.Fatalf("operation became %s; want it settled as succeeded", st.Status)
		}
		if time.Now().After(deadline) {
			t.Fatal("reconciliation did not settle the operation within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	if st.Downstream.ExternalID != "acme/widgets#1" || st.Downstream.Attempts != 1 {
		t.Errorf("downstream = %+v; want the one issue, from one attempt", st.Downstream)
	}
	issues := gh.Issues("acme/widgets")
	if n := gh.CreateRequests(); n != 1 || len(issues) != 1 || !strings.Contains(issues[0].Body, tracker.Marker("acme", key)) {
		t.Fatalf("create requests %d, issues %+v; want one, with the operation's marker", n, issues)
	}
	var ticket struct {
		ExternalURL string `json:"external_url"`
	}
	api(t, "POST", base+"/api/v1/tickets", token, map[string]any{"project_id": "widgets", "title": "Widget jams"},
		http.StatusOK, &ticket, "Idempotency-Key", key)
	if !strings.HasSuffix(ticket.ExternalURL, "/acme/widgets/issues/1") {
		t.Errorf("replayed ticket's external_url = %q", ticket.ExternalURL)
	}
}
