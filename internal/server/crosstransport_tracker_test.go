package server_test

import (
	"bytes"
	"encoding/json"
	"io"
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
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

const trackerRepo = "acme/widgets"

type trackerEnv struct {
	*servertest.Env
	gh                   *githubtest.Server
	tenant, admin, agent string
}

// startTracker serves ticketd with a tracker-backed project "widgets",
// created over REST by an admin, on a fresh GitHub-shaped server.
func startTracker(t *testing.T, d *db.DB) *trackerEnv {
	t.Helper()
	gh := githubtest.New("ghp_cross")
	apiURL := githubtest.Start(t, gh)
	tracked := githubtest.Tracked("ghp_cross", time.Second)
	// Shorter than a request may take on a loaded machine would invite
	// the duplicate the settle window exists to prevent.
	tracked.Settle, tracked.Lease = 3*time.Second, 10*time.Second
	env := servertest.Start(t, d, servertest.Options{Tracked: tracked})
	tenant := "t" + uuid.NewString()[:8] // subtests share the database
	e := &trackerEnv{Env: env, gh: gh, tenant: tenant,
		admin: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin),
		agent: env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite)}
	var p contract.Project
	e.rest(t, "POST", "/api/v1/projects", e.admin, "", map[string]any{"id": "widgets", "key": "WID", "name": "Widgets",
		"backend": map[string]any{"kind": "github", "repository": trackerRepo, "api_url": apiURL, "credential": githubtest.Credential}}, http.StatusCreated, &p)
	if p.ID != "widgets" || strings.Contains(mustJSON(t, p), "ghp_cross") {
		t.Fatalf("project = %+v; want it, and never the token", p)
	}
	return e
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rest calls the API and decodes the answer; want 0 accepts any status.
func (e *trackerEnv) rest(t *testing.T, method, path, token, key string, body, want any, out any) (*http.Response, string) {
	t.Helper()
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader([]byte(mustJSON(t, body)))
	}
	req, err := http.NewRequest(method, e.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if w, ok := want.(int); ok && w != 0 && resp.StatusCode != w {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, raw, w)
	}
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp, string(raw)
}

func (e *trackerEnv) marked(key string) []githubtest.Issue {
	var out []githubtest.Issue
	for _, i := range e.gh.Issues(trackerRepo) {
		if strings.Contains(i.Body, tracker.Marker(e.tenant, key)) {
			out = append(out, i)
		}
	}
	return out
}

// restUntilCreated retries POST /tickets with key until it answers a ticket,
// failing on any answer that claims a clean failure meanwhile.
func (e *trackerEnv) restUntilCreated(t *testing.T, key string, body map[string]any) (*http.Response, contract.Ticket) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var tk contract.Ticket
		resp, raw := e.rest(t, "POST", "/api/v1/tickets", e.agent, key, body, 0, &tk)
		switch resp.StatusCode {
		case http.StatusCreated, http.StatusOK:
			return resp, tk
		case http.StatusServiceUnavailable, http.StatusConflict:
			if !strings.Contains(raw, "outcome_unknown") && !strings.Contains(raw, "operation_in_progress") {
				t.Fatalf("retry = %d %s; want outcome_unknown or operation_in_progress while unsettled", resp.StatusCode, raw)
			}
		default:
			t.Fatalf("retry = %d %s: a clean answer for something that may have happened", resp.StatusCode, raw)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 15s: %s", raw)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestTrackerBackedCreateAcrossTransports drives tracker-backed creates over
// real MCP and REST against the GitHub-shaped server under its faults: an
// agent never hears succeeded for an issue not proven, nor a clean failure
// for one that may exist; after reconciliation each operation has exactly
// one issue, or the duplicate the tracker let through is found, closed and
// reported.
func TestTrackerBackedCreateAcrossTransports(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		for _, fault := range []githubtest.Fault{githubtest.DropAfterCreate, githubtest.BadGatewayAfterCreate, githubtest.SlowCreate} {
			t.Run("UnansweredMCPCreateIsUnknownThenRESTRetryFindsIt", func(t *testing.T) {
				t.Parallel()
				e := startTracker(t, d)
				e.gh.SlowDelay = 1500 * time.Millisecond // past the client's 1s, well within the 3s settle window
				e.gh.FailCreates(fault)
				key := uuid.NewString()
				cs := e.Connect(t, e.agent)
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{
					"operation_id": key, "project_id": "widgets", "title": "Widget jams", "labels": []string{"bug"}})
				errOut := servertest.Decode[mcptools.ErrorOut](t, res)
				if !res.IsError || errOut.Error.Code != "outcome_unknown" || errOut.Status != "unknown" {
					t.Fatalf("MCP create = %+v; want outcome_unknown with status unknown", errOut)
				}
				resp, tk := e.restUntilCreated(t, key, map[string]any{"project_id": "widgets", "title": "Widget jams", "labels": []string{"BUG"}})
				if resp.Header.Get("Idempotent-Replayed") != "true" || !strings.HasSuffix(tk.ExternalURL, "/acme/widgets/issues/1") {
					t.Errorf("REST retry: replayed %q, ticket %+v", resp.Header.Get("Idempotent-Replayed"), tk)
				}
				if n, m := e.gh.CreateRequests(), len(e.marked(key)); n != 1 || m != 1 {
					t.Errorf("create requests %d, issues %d; want 1 and 1", n, m)
				}
				st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": key}))
				if st.Status != "succeeded" || st.Downstream == nil || st.Downstream.System != "github" || st.Downstream.Status != "succeeded" ||
					st.Downstream.Attempts != 1 || st.Downstream.ExternalID != trackerRepo+"#1" || len(st.History) == 0 {
					t.Errorf("get_operation_status = %+v", st)
				}
			})
		}

		t.Run("RateLimitedRESTCreateIsPendingThenMCPRetryCreatesOnce", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			e.gh.FailCreates(githubtest.SecondaryRateLimit)
			key := uuid.NewString()
			resp, raw := e.rest(t, "POST", "/api/v1/tickets", e.agent, key, map[string]any{"project_id": "widgets", "title": "Limited"}, http.StatusConflict, nil)
			if !strings.Contains(raw, "operation_in_progress") || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("rate-limited create = %d %s; want pending with Retry-After", resp.StatusCode, raw)
			}
			cs := e.Connect(t, e.agent)
			deadline := time.Now().Add(10 * time.Second)
			for {
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": key, "project_id": "widgets", "title": "Limited"})
				if !res.IsError {
					break
				}
				if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; code != "operation_in_progress" || time.Now().After(deadline) {
					t.Fatalf("MCP retry = %s; want operation_in_progress until the Retry-After passes", code)
				}
				time.Sleep(250 * time.Millisecond)
			}
			if n, m := e.gh.CreateRequests(), len(e.marked(key)); n != 2 || m != 1 {
				t.Errorf("create requests %d, issues %d; want 2 (one refused) and 1", n, m)
			}
		})

		t.Run("DuplicateFromALaggingListIsClosedAndReported", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			e.gh.FailCreates(githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			key := uuid.NewString()
			body := map[string]any{"project_id": "widgets", "title": "Lagging"}
			if resp, raw := e.rest(t, "POST", "/api/v1/tickets", e.agent, key, body, 0, nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(raw, "outcome_unknown") {
				t.Fatalf("first create = %d %s; want outcome_unknown", resp.StatusCode, raw)
			}
			_, tk := e.restUntilCreated(t, key, body)
			if !strings.HasSuffix(tk.ExternalURL, "/acme/widgets/issues/2") {
				t.Fatalf("after the settle window: ticket %+v; want the re-sent issue #2", tk)
			}
			e.gh.LagLists(0)
			var st contract.OperationStatus
			e.rest(t, "POST", "/api/v1/operations/"+key+"/reconcile", e.admin, "", nil, http.StatusOK, &st)
			issues := e.marked(key)
			if len(issues) != 2 || issues[0].State != "open" || issues[1].State != "closed" || !strings.Contains(issues[1].Comments[0].Body, "Duplicate of #1") {
				t.Fatalf("issues = %+v; want #1 kept and #2 closed with a comment", issues)
			}
			if ds := st.Downstream; ds.ExternalID != trackerRepo+"#1" || !strings.Contains(mustJSON(t, st.History), "duplicate "+trackerRepo+"#2 found and closed; kept "+trackerRepo+"#1") {
				t.Fatalf("downstream = %+v, history %+v; want #1 kept and #2 reported closed", ds, st.History)
			}
			if !strings.Contains(mustJSON(t, st.History), "reconcile_requested") {
				t.Errorf("history lacks the operator's request: %+v", st.History)
			}
			samples, err := scrapeMetrics(e.URL)
			if err != nil {
				t.Fatal(err)
			}
			for result, atLeast := range map[string]float64{"duplicate": 1, "resent": 1, "waiting": 1} {
				if got := samples[`ticketd_reconciliations_total{result="`+result+`"}`]; got < atLeast {
					t.Errorf("ticketd_reconciliations_total{result=%q} = %v, want ≥ %v", result, got, atLeast)
				}
			}
		})

		t.Run("OperatorResolvesOverRESTAndRetriesAnswerIt", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			e.gh.FailCreates(githubtest.DropAfterCreate, githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			found, gone := uuid.NewString(), uuid.NewString()
			cs := e.Connect(t, e.agent)
			for _, key := range []string{found, gone} {
				res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": key, "project_id": "widgets", "title": "Resolve " + key})
				if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; code != "outcome_unknown" {
					t.Fatalf("create = %s; want outcome_unknown", code)
				}
			}
			e.rest(t, "POST", "/api/v1/operations/"+found+"/resolve", e.agent, "", map[string]any{"outcome": "succeeded", "external_id": "#1", "reason": "x"}, http.StatusForbidden, nil)
			var st contract.OperationStatus
			e.rest(t, "POST", "/api/v1/operations/"+found+"/resolve", e.admin, "", map[string]any{"outcome": "succeeded", "external_id": trackerRepo + "#1", "reason": "seen in the repository"}, http.StatusOK, &st)
			last := st.History[len(st.History)-1]
			if st.Status != "succeeded" || last.Kind != "resolved" || last.Actor == "ticketd" || !strings.Contains(last.Detail, "seen in the repository") {
				t.Fatalf("resolved = %s, history ends %+v; want succeeded with the operator's audited reason", st.Status, last)
			}
			res := servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": found, "project_id": "widgets", "title": "Resolve " + found})
			if out := servertest.Decode[mcptools.CreateTicketOut](t, res); res.IsError || !out.Replayed || !strings.HasSuffix(out.Ticket.ExternalURL, "/acme/widgets/issues/1") {
				t.Fatalf("MCP retry after resolve = %+v", out)
			}
			e.rest(t, "POST", "/api/v1/operations/"+gone+"/resolve", e.admin, "", map[string]any{"outcome": "not_created", "reason": "checked by hand"}, http.StatusOK, nil)
			e.rest(t, "POST", "/api/v1/operations/"+gone+"/resolve", e.admin, "", map[string]any{"outcome": "not_created", "reason": "again"}, http.StatusConflict, nil)
			res = servertest.Call(t, cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": gone, "project_id": "widgets", "title": "Resolve " + gone})
			if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; !res.IsError || code != "operation_failed" {
				t.Fatalf("MCP retry after not_created = %s; want operation_failed", code)
			}
		})
	})
}
