package main

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// TestKill9BetweenSendAndRecordSettlesWithoutASecondJiraIssue is the Jira
// twin of TestKill9BetweenSendAndRecordSettlesWithoutASecondIssue: the
// built binary, a create that Jira files and never answers, SIGKILL before
// anything is recorded; the restarted ticketd's job finds the issue by its
// label and settles the operation with it, one create request, one issue.
func TestKill9BetweenSendAndRecordSettlesWithoutASecondJiraIssue(t *testing.T) {
	t.Parallel()
	rawURL := dbtest.PostgresURL(t)
	bin := filepath.Join(t.TempDir(), "ticketd")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	jr := jiratest.New("bot@acme.test", "kill9")
	site := jiratest.Start(t, jr)
	jr.FailCreates(jiratest.HangAfterCreate)

	addr := freeAddr(t)
	const issuer = "https://issuer.test"
	env := []string{
		"TICKETD_DATABASE_URL=" + rawURL, "TICKETD_JWT_ISSUER=" + issuer, "TICKETD_JWT_HS256_SECRET=" + testSecret,
		"TICKETD_LOG_LEVEL=warn", "JIRA_TOKEN_KILL9=bot@acme.test:kill9",
		"TICKETD_TRACKER_CREDENTIALS=jira=JIRA_TOKEN_KILL9", "TICKETD_TRACKER_HOSTS=127.0.0.1", "TICKETD_TRACKER_ALLOW_PRIVATE=on",
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
	api(t, "POST", base+"/api/v1/projects", token, map[string]any{"id": "ops", "key": "OPX", "name": "Operations",
		"backend": map[string]any{"kind": "jira", "site": site, "project_key": "OPS", "credential": "jira"}},
		http.StatusCreated, nil)
	key := uuid.NewString()
	sendUnanswered(base+"/api/v1/tickets", token, key, map[string]any{"project_id": "ops", "title": "Disk full"})
	waitFor(t, func() bool { return len(jr.Issues("OPS")) == 1 })
	first.kill9(t)

	second := startBinary(t, bin, addr, env)
	st := waitSettled(t, base, token, key, func() string {
		return "first ticketd:\n" + first.stderr.String() + "\nsecond ticketd:\n" + second.stderr.String()
	})
	if st.Downstream.ExternalID != "OPS-1" || st.Downstream.Attempts != 1 {
		t.Errorf("downstream = %+v; want OPS-1, from one attempt", st.Downstream)
	}
	issues := jr.Issues("OPS")
	if n := jr.CreateRequests(); n != 1 || len(issues) != 1 || !slices.Contains(issues[0].Labels, jira.OpLabel("acme", key)) {
		t.Fatalf("create requests %d, issues %+v; want one, with the operation's label", n, issues)
	}
	api(t, "POST", base+"/api/v1/tickets", token, map[string]any{"project_id": "ops", "title": "Disk full"},
		http.StatusOK, nil, "Idempotency-Key", key)
}
