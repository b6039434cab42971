package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/db"
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
// Then the same for a comment on that issue, killing the restarted ticketd.
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
		// The fake listens on loopback over plain http: an operator's
		// self-hosted tracker on its own network.
		"TICKETD_TRACKER_CREDENTIALS=gh=GH_TOKEN_KILL9", "TICKETD_TRACKER_HOSTS=127.0.0.1", "TICKETD_TRACKER_ALLOW_PRIVATE=on",
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
		"backend": map[string]any{"kind": "github", "repository": "acme/widgets", "api_url": apiURL, "credential": "gh"}},
		http.StatusCreated, nil)
	key := uuid.NewString()
	sendUnanswered(base+"/api/v1/tickets", token, key, map[string]any{"project_id": "widgets", "title": "Widget jams"})
	waitFor(t, func() bool { return len(gh.Issues("acme/widgets")) == 1 })
	first.kill9(t)

	second := startBinary(t, bin, addr, env)
	logs := func() string {
		return "first ticketd:\n" + first.stderr.String() + "\nsecond ticketd:\n" + second.stderr.String()
	}
	st := waitSettled(t, base, token, key, logs)
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

	// The same for a comment on the issue: made, its answer held, ticketd killed.
	gh.FailComments(githubtest.HangAfterCreate)
	ckey := uuid.NewString()
	sendUnanswered(base+"/api/v1/tickets/WID-1/comments", token, ckey, map[string]any{"body": "Seen on line 3."})
	waitFor(t, func() bool { return len(gh.Issues("acme/widgets")[0].Comments) == 1 })
	second.kill9(t)
	third := startBinary(t, bin, addr, env)
	cst := waitSettled(t, base, token, ckey, func() string {
		return "second ticketd:\n" + second.stderr.String() + "\nthird ticketd:\n" + third.stderr.String()
	})
	comments := gh.Issues("acme/widgets")[0].Comments
	if n := gh.CommentRequests(); n != 1 || len(comments) != 1 || cst.Downstream.Attempts != 1 ||
		!strings.Contains(comments[0].Body, tracker.ActionMarker("acme", "add_comment", ckey)) {
		t.Fatalf("comment requests %d, comments %+v, downstream %+v; want one, with the operation's marker", n, comments, cst.Downstream)
	}
	api(t, "POST", base+"/api/v1/tickets/WID-1/comments", token, map[string]any{"body": "Seen on line 3."},
		http.StatusOK, nil, "Idempotency-Key", ckey)
}

// sendUnanswered posts body with key in the background: its answer never
// comes, since ticketd dies first.
func sendUnanswered(url, token, key string, body map[string]any) {
	go func() {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", url, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_ = resp.Body.Close()
		}
	}()
}

type settledStatus struct {
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

// waitSettled polls key's operation until the restarted ticketd's job
// settles it as succeeded, failing on any other settling.
func waitSettled(t *testing.T, base, token, key string, logs func() string) settledStatus {
	t.Helper()
	var st settledStatus
	defer func() {
		if t.Failed() {
			t.Logf("status %+v\n%s", st, logs())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		api(t, "GET", base+"/api/v1/operations/"+key, token, nil, http.StatusOK, &st)
		if st.Status == "succeeded" {
			return st
		}
		if st.Status != "pending" && st.Status != "unknown" {
			t.Fatalf("operation became %s; want it settled as succeeded", st.Status)
		}
		if time.Now().After(deadline) {
			t.Fatal("reconciliation did not settle the operation within 60s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestStartMapsRetiredTokenEnvs: at start, a project stored with a
// token_env (before credentials) is mapped to the declared credential
// whose variable it named, and one naming a variable no credential holds
// (ticketd's own secret, as the attack run did) stays unusable, with a
// warning that names the project; a create in it says the project needs a
// credential and sends nothing.
func TestStartMapsRetiredTokenEnvs(t *testing.T) {
	t.Parallel()
	trap := githubtest.NewTrap(t)
	env := with(baseEnv(dbtest.SQLiteURL(t)), "TICKETD_ADDR", freeAddr(t), "TICKETD_TRACKER_CREDENTIALS", "gh=GH_TOKEN", "GH_TOKEN", "ghp_operator")
	first := startServe(t, env)
	if err := first.stop(t); err != nil {
		t.Fatal(err)
	}
	store, err := db.Open(context.Background(), env["TICKETD_DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	for id, variable := range map[string]string{"mapped": "GH_TOKEN", "stolen": "TICKETD_JWT_HS256_SECRET"} {
		err := store.Gorm.Exec(`INSERT INTO projects (tenant_id, id, key, name, created_at, backend_kind, backend_repository, backend_api_url, backend_token_env_retired)
			VALUES ('acme', ?, ?, ?, ?, 'github', 'acme/widgets', ?, ?)`, id, strings.ToUpper(id[:3]), id, time.Now().UTC(), "http://"+trap.Addr()+"/", variable).Error
		if err != nil {
			t.Fatal(err)
		}
	}

	second := startServe(t, env)
	logs := second.Stderr.String()
	if !strings.Contains(logs, "project stolen of tenant acme names the retired token_env TICKETD_JWT_HS256_SECRET") || strings.Contains(logs, "project mapped") {
		t.Errorf("start logs:\n%s\nwant a warning for the unmapped project alone", logs)
	}
	var credential *string
	if err := store.Gorm.Raw(`SELECT backend_credential FROM projects WHERE tenant_id = 'acme' AND id = 'mapped'`).Scan(&credential).Error; err != nil || credential == nil || *credential != "gh" {
		t.Errorf("the mapped project's credential = %v, %v; want gh", credential, err)
	}
	token := mintToken(t, env, "--tenant", "acme", "--subject", "alice", "--scope", "tickets:read tickets:write")
	var problem struct {
		Code   string `json:"code"`
		Detail string `json:"detail"`
	}
	api(t, "POST", second.URL+"/api/v1/tickets", token, map[string]any{"project_id": "stolen", "title": "Widget jams"},
		http.StatusBadRequest, &problem, "Idempotency-Key", uuid.NewString())
	if problem.Code != "invalid_input" || !strings.Contains(problem.Detail, "needs a credential") {
		t.Errorf("create in the unmapped project = %+v; want invalid_input saying it needs a credential", problem)
	}
	if n := trap.Accepted(); n != 0 {
		t.Errorf("the project's listener accepted %d connections; want none", n)
	}
}
