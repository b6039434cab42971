package server_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

// startJira serves ticketd with a Jira-backed project "ops", created over
// REST by an admin with §22's backend document, on a fresh Jira-shaped
// server; it reuses trackerEnv's REST helpers (gh is nil).
func startJira(t *testing.T, d *db.DB) (*trackerEnv, *jiratest.Server) {
	t.Helper()
	jr := jiratest.New("bot@acme.test", "jira-cross")
	jr.SlowDelay = 1500 * time.Millisecond // past the client's 1s, well within the 3s settle window
	site := jiratest.Start(t, jr)
	tracked := jiratest.Tracked("bot@acme.test:jira-cross", jira.Options{Timeout: time.Second})
	tracked.Settle, tracked.Lease = 3*time.Second, 10*time.Second
	env := servertest.Start(t, d, servertest.Options{Tracked: tracked})
	tenant := "t" + uuid.NewString()[:8]
	e := &trackerEnv{Env: env, tenant: tenant,
		admin: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin),
		agent: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite)}
	e.rest(t, "POST", "/api/v1/projects", e.admin, "", map[string]any{"id": "widgets", "key": "WID", "name": "Widgets",
		"backend": map[string]any{"kind": "jira", "site": site, "project_key": "OPS", "credential": jiratest.Credential,
			"status_map": map[string]string{"closed": "Done"}}}, http.StatusCreated, nil)
	return e, jr
}

// TestJiraBackedCreateAcrossTransports: an unanswered create over MCP is
// unknown; a REST retry finds the issue by its label and replays it; the
// operation's status over MCP names Jira, the key and the issue's page.
// Then a rate-limited create over REST is pending and made once.
func TestJiraBackedCreateAcrossTransports(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		for _, fault := range []jiratest.Fault{jiratest.DropAfterCreate, jiratest.BadGatewayAfterCreate, jiratest.SlowCreate} {
			t.Run("UnansweredMCPCreateIsUnknownThenRESTRetryFindsIt", func(t *testing.T) {
				t.Parallel()
				e, jr := startJira(t, d)
				jr.FailCreates(fault)
				key := uuid.NewString()
				cs := e.Connect(t, e.agent)
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": key, "project_id": "widgets", "title": "Disk full"})
				if out := servertest.Decode[mcptools.ErrorOut](t, res); !res.IsError || out.Error.Code != "outcome_unknown" {
					t.Fatalf("MCP create = %+v; want outcome_unknown", out)
				}
				resp, tk := e.restUntilCreated(t, key, map[string]any{"project_id": "widgets", "title": "Disk full"})
				if resp.Header.Get("Idempotent-Replayed") != "true" || !strings.HasSuffix(tk.ExternalURL, "/browse/OPS-1") {
					t.Errorf("REST retry: replayed %q, ticket %+v", resp.Header.Get("Idempotent-Replayed"), tk)
				}
				if n, m := jr.CreateRequests(), len(jr.Issues("OPS")); n != 1 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
				}
				st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": key}))
				if st.Status != "succeeded" || st.Downstream == nil || st.Downstream.System != "jira" || st.Downstream.ExternalID != "OPS-1" ||
					!strings.HasSuffix(st.Downstream.ExternalURL, "/browse/OPS-1") || st.Downstream.Attempts != 1 {
					t.Errorf("get_operation_status = %+v", st.Downstream)
				}
			})
		}

		t.Run("RateLimitedRESTCreateIsPendingThenMadeOnce", func(t *testing.T) {
			t.Parallel()
			e, jr := startJira(t, d)
			jr.FailCreates(jiratest.TooManyRequests)
			key := uuid.NewString()
			resp, raw := e.rest(t, "POST", "/api/v1/tickets", e.agent, key, map[string]any{"project_id": "widgets", "title": "Limited"}, http.StatusConflict, nil)
			if !strings.Contains(raw, "operation_in_progress") || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("rate-limited create = %d %s; want pending with Retry-After", resp.StatusCode, raw)
			}
			e.restUntilCreated(t, key, map[string]any{"project_id": "widgets", "title": "Limited"})
			if n, m := jr.CreateRequests(), len(jr.Issues("OPS")); n != 2 || m != 1 {
				t.Errorf("create requests %d, issues %d; want 2 (one refused) and 1", n, m)
			}
		})
	})
}
