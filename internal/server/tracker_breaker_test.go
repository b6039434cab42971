package server_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// hangable is a fake tracker that, while hang is set, reads each request
// and never answers it; it counts every request that reaches it.
type hangable struct {
	gh       *githubtest.Server
	hang     atomic.Bool
	requests atomic.Int64
	url      string
}

func startHangable(t *testing.T, token string) *hangable {
	t.Helper()
	h := &hangable{gh: githubtest.New(token)}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.requests.Add(1)
		if h.hang.Load() {
			// Read first: the server notices the client going away only
			// once the body has been read.
			_, _ = io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		h.gh.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)
	h.gh.SetBaseURL(api.URL)
	h.url = api.URL + "/"
	return h
}

// trackedProject creates tenant's project id on the tracker at apiURL.
func trackedProject(t *testing.T, env *servertest.Env, tenant, id, apiURL string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.URL+"/api/v1/projects", strings.NewReader(`{"id":"`+id+`","key":"WID","name":"Widgets",`+
		`"backend":{"kind":"github","repository":"acme/widgets","api_url":"`+apiURL+`","credential":"`+githubtest.Credential+`"}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+env.Token(t, tenant, authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin))
	req.Header.Set("Content-Type", "application/json")
	if resp, body := do(t, req); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create the tracker-backed project %s: %d %s", id, resp.StatusCode, body)
	}
}

// TestHangingTrackerHostOpensItsBreaker: tenant A's tracker host accepts
// requests and never answers. After BreakerFailures creates that time
// out (outcome_unknown), a create in A's project answers at once,
// retryable, with nothing sent: the operation is pending with no attempt
// and the host sees no request; a retry of an unknown one stays unknown,
// its look kept back. Tenant B's project on another host is
// served meanwhile. After the cool-down, with the host answering again, a
// retry of that create goes out as the probe and succeeds, the breaker
// closes and the next create goes through: one issue each.
func TestHangingTrackerHostOpensItsBreaker(t *testing.T) {
	t.Parallel()
	const token = "ghp_breaker"
	trackerA, trackerB := startHangable(t, token), startHangable(t, token)
	const timeout, coolDown = time.Second, 3 * time.Second
	tracked := githubtest.TrackedWith(token, github.Options{Timeout: timeout, BreakerFailures: 2, BreakerCoolDown: coolDown})
	tracked.Settle, tracked.Lease = time.Minute, 5*time.Minute
	env := servertest.Start(t, dbtest.SQLite(t), servertest.Options{Tracked: tracked})
	trackedProject(t, env, "a", "widgets", trackerA.url)
	trackedProject(t, env, "b", "gadgets", trackerB.url)
	csA := env.Connect(t, env.Token(t, "a", authn.ScopeRead, authn.ScopeWrite))
	csB := env.Connect(t, env.Token(t, "b", authn.ScopeRead, authn.ScopeWrite))
	create := func(cs *mcp.ClientSession, project, op string) *mcp.CallToolResult {
		t.Helper()
		res, err := servertest.TryCall(cs, mcptools.ToolCreateTicket, map[string]any{"operation_id": op, "project_id": project, "title": "Widget jams"})
		if err != nil {
			t.Fatalf("create in %s: %v", project, err)
		}
		return res
	}

	trackerA.hang.Store(true)
	unknown := uuid.NewString()
	for i, op := range []string{unknown, uuid.NewString()} {
		if res := create(csA, "widgets", op); toolErrorOf(t, res.StructuredContent).Code != "outcome_unknown" {
			t.Fatalf("create %d into the hanging host: %+v, want outcome_unknown", i+1, res.StructuredContent)
		}
	}
	opened := time.Now()
	if n := trackerA.requests.Load(); n != 2 {
		t.Fatalf("the hanging host saw %d requests for two creates, want 2", n)
	}

	op := uuid.NewString()
	start := time.Now()
	res := create(csA, "widgets", op)
	took := time.Since(start)
	if e := toolErrorOf(t, res.StructuredContent); e.Code != "operation_in_progress" || !e.Retryable {
		t.Fatalf("create with the host's breaker open: %+v, want retryable operation_in_progress", res.StructuredContent)
	}
	if took >= timeout {
		t.Errorf("create with the host's breaker open took %s, want an answer before the tracker timeout %s", took, timeout)
	}
	if n := trackerA.requests.Load(); n != 2 {
		t.Errorf("the host saw %d requests after its breaker opened, want none more than the 2 before", n)
	}
	st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, csA, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": op}))
	if ds := st.Downstream; st.Status != "pending" || ds == nil || ds.Attempts != 0 || !strings.Contains(ds.LastError, "not sent") {
		t.Errorf("the operation refused by the open breaker: %+v %+v, want pending, no attempt, last_error saying not sent", st, ds)
	}

	// The retry of an unknown create must look before it sends: the look
	// is kept back too, and the operation stays unknown, never not created.
	if res := create(csA, "widgets", unknown); toolErrorOf(t, res.StructuredContent).Code != "outcome_unknown" {
		t.Errorf("retry of an unknown create with the breaker open: %+v, want outcome_unknown", res.StructuredContent)
	}
	if n := trackerA.requests.Load(); n != 2 {
		t.Errorf("the host saw %d requests after the retry of the unknown create, want still 2", n)
	}

	wantAnswered(t, csB, mcptools.ToolCreateTicket, map[string]any{"operation_id": uuid.NewString(), "project_id": "gadgets", "title": "Gadget jams"})

	trackerA.hang.Store(false)
	time.Sleep(time.Until(opened.Add(coolDown + 200*time.Millisecond)))
	if res := create(csA, "widgets", op); res.IsError {
		t.Fatalf("the retry after the cool-down, the host answering: %+v, want it sent as the probe and created", res.StructuredContent)
	}
	if n := trackerA.requests.Load(); n != 3 {
		t.Errorf("the host saw %d requests after the probe, want 3", n)
	}
	wantAnswered(t, csA, mcptools.ToolCreateTicket, map[string]any{"operation_id": uuid.NewString(), "project_id": "widgets", "title": "After"})
	if n := len(trackerA.gh.Issues("acme/widgets")); n != 2 {
		t.Errorf("%d issues on the tracker, want 2 (the retried create and the one after)", n)
	}
}
