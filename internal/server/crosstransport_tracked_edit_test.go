package server_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/contract"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/mcptools"
	"github.com/ticketd/ticketd/internal/server/servertest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// trackedTicket creates a ticket over REST, mirroring issue #1.
func (e *trackerEnv) trackedTicket(t *testing.T) contract.Ticket {
	t.Helper()
	var tk contract.Ticket
	e.rest(t, "POST", "/api/v1/tickets", e.agent, uuid.NewString(), map[string]any{"project_id": "widgets", "title": "Widget jams"}, http.StatusCreated, &tk)
	if !strings.HasSuffix(tk.ExternalURL, "/acme/widgets/issues/1") {
		t.Fatalf("ticket = %+v; want it to mirror issue #1", tk)
	}
	return tk
}

// markedComments returns the comments on issue #1 carrying key's marker.
func (e *trackerEnv) markedComments(key string) []githubtest.Comment {
	var out []githubtest.Comment
	for _, c := range e.gh.Issues(trackerRepo)[0].Comments {
		if strings.Contains(c.Body, tracker.ActionMarker(e.tenant, tickets.ActionAddComment, key)) {
			out = append(out, c)
		}
	}
	return out
}

// restUntilDone retries a write with key until it answers 2xx, failing on
// any answer that claims a clean failure meanwhile.
func (e *trackerEnv) restUntilDone(t *testing.T, method, path, key string, body map[string]any, out any) *http.Response {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, raw := e.rest(t, method, path, e.agent, key, body, 0, out)
		switch resp.StatusCode {
		case http.StatusCreated, http.StatusOK:
			return resp
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

// callUntilDone retries an MCP write until it is not an error, failing on
// any error but outcome_unknown or operation_in_progress meanwhile.
func callUntilDone[T any](t *testing.T, e *trackerEnv, call func() (bool, T, mcptools.ErrorOut)) T {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		isErr, out, errOut := call()
		if !isErr {
			return out
		}
		if c := errOut.Error.Code; c != "outcome_unknown" && c != "operation_in_progress" {
			t.Fatalf("MCP retry = %+v: a clean answer for something that may have happened", errOut)
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 15s: %+v", errOut)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// TestTrackerBackedEditsAndCommentsAcrossTransports drives update_ticket and
// add_comment on tracker-backed tickets over real MCP and REST against the
// GitHub-shaped server under its faults: the edit or comment exists exactly
// once after reconciliation, or the duplicate is found, deleted and
// reported; no agent hears succeeded for what is not proven nor a clean
// failure for what may have happened.
func TestTrackerBackedEditsAndCommentsAcrossTransports(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		for _, fault := range []githubtest.Fault{githubtest.DropAfterCreate, githubtest.BadGatewayAfterCreate, githubtest.SlowCreate} {
			t.Run("UnansweredMCPCommentIsUnknownThenRESTRetryFindsIt", func(t *testing.T) {
				t.Parallel()
				e := startTracker(t, d)
				e.gh.SlowDelay = 1500 * time.Millisecond // past the client's 1s, well within the 3s settle window
				tk := e.trackedTicket(t)
				e.gh.FailComments(fault)
				key := uuid.NewString()
				cs := e.Connect(t, e.agent)
				res := servertest.Call(t, cs, mcptools.ToolAddComment, map[string]any{"operation_id": key, "id": tk.Key, "body": "Seen on line 3."})
				if errOut := servertest.Decode[mcptools.ErrorOut](t, res); !res.IsError || errOut.Error.Code != "outcome_unknown" || errOut.Status != "unknown" {
					t.Fatalf("MCP comment = %+v; want outcome_unknown with status unknown", errOut)
				}
				var c contract.Comment
				resp := e.restUntilDone(t, "POST", "/api/v1/tickets/"+tk.Key+"/comments", key, map[string]any{"body": "Seen on line 3."}, &c)
				if resp.Header.Get("Idempotent-Replayed") != "true" || c.Body != "Seen on line 3." {
					t.Errorf("REST retry: replayed %q, comment %+v", resp.Header.Get("Idempotent-Replayed"), c)
				}
				if n, m := e.gh.CommentRequests(), len(e.markedComments(key)); n != 1 || m != 1 {
					t.Errorf("comment requests %d, marked comments %d; want 1 and 1", n, m)
				}
				st := servertest.Decode[contract.OperationStatus](t, servertest.Call(t, cs, mcptools.ToolGetOperationStatus, map[string]any{"operation_id": key}))
				if st.Status != "succeeded" || st.CommentID != c.ID || st.Downstream == nil || st.Downstream.System != "github" || st.Downstream.Attempts != 1 ||
					!strings.HasPrefix(st.Downstream.ExternalID, trackerRepo+"#1/comments/") || st.Downstream.LastError == "" {
					t.Errorf("get_operation_status = %+v %+v", st, st.Downstream)
				}
			})

			t.Run("UnansweredRESTEditIsUnknownThenMCPRetryFindsIt", func(t *testing.T) {
				t.Parallel()
				e := startTracker(t, d)
				e.gh.SlowDelay = 1500 * time.Millisecond
				tk := e.trackedTicket(t)
				e.gh.FailEdits(fault)
				key := uuid.NewString()
				body := map[string]any{"title": "Widget jams on Mondays", "status": "closed"}
				if resp, raw := e.rest(t, "PATCH", "/api/v1/tickets/"+tk.Key, e.agent, key, body, 0, nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(raw, "outcome_unknown") {
					t.Fatalf("REST edit = %d %s; want outcome_unknown", resp.StatusCode, raw)
				}
				cs := e.Connect(t, e.agent)
				args := map[string]any{"operation_id": key, "id": tk.Key, "title": "Widget jams on Mondays", "status": "closed"}
				out := callUntilDone(t, e, func() (bool, mcptools.UpdateTicketOut, mcptools.ErrorOut) {
					res := servertest.Call(t, cs, mcptools.ToolUpdateTicket, args)
					if res.IsError {
						return true, mcptools.UpdateTicketOut{}, servertest.Decode[mcptools.ErrorOut](t, res)
					}
					return false, servertest.Decode[mcptools.UpdateTicketOut](t, res), mcptools.ErrorOut{}
				})
				issue := e.gh.Issues(trackerRepo)[0]
				if !out.Replayed || out.Version != 2 || out.Ticket.Status != "closed" || issue.State != "closed" || issue.Title != "Widget jams on Mondays" {
					t.Errorf("MCP retry = %+v, issue %+v; want the earlier call's edit, version 2", out, issue)
				}
				if n := e.gh.EditRequests(); n != 1 {
					t.Errorf("edit requests = %d, want 1", n)
				}
			})
		}

		t.Run("RateLimitedRESTCommentIsPendingThenMCPRetrySendsOnce", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			tk := e.trackedTicket(t)
			e.gh.FailComments(githubtest.TooManyRequests)
			key := uuid.NewString()
			resp, raw := e.rest(t, "POST", "/api/v1/tickets/"+tk.Key+"/comments", e.agent, key, map[string]any{"body": "Limited"}, http.StatusConflict, nil)
			if !strings.Contains(raw, "operation_in_progress") || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("rate-limited comment = %d %s; want pending with Retry-After", resp.StatusCode, raw)
			}
			cs := e.Connect(t, e.agent)
			callUntilDone(t, e, func() (bool, mcptools.AddCommentOut, mcptools.ErrorOut) {
				res := servertest.Call(t, cs, mcptools.ToolAddComment, map[string]any{"operation_id": key, "id": tk.Key, "body": "Limited"})
				if res.IsError {
					return true, mcptools.AddCommentOut{}, servertest.Decode[mcptools.ErrorOut](t, res)
				}
				return false, servertest.Decode[mcptools.AddCommentOut](t, res), mcptools.ErrorOut{}
			})
			if n, m := e.gh.CommentRequests(), len(e.markedComments(key)); n != 2 || m != 1 {
				t.Errorf("comment requests %d, marked comments %d; want 2 (one refused) and 1", n, m)
			}
		})

		t.Run("DuplicateCommentFromALaggingListIsDeletedAndReported", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			tk := e.trackedTicket(t)
			e.gh.FailComments(githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			key := uuid.NewString()
			path := "/api/v1/tickets/" + tk.Key + "/comments"
			if resp, raw := e.rest(t, "POST", path, e.agent, key, map[string]any{"body": "Lagging"}, 0, nil); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(raw, "outcome_unknown") {
				t.Fatalf("first comment = %d %s; want outcome_unknown", resp.StatusCode, raw)
			}
			e.restUntilDone(t, "POST", path, key, map[string]any{"body": "Lagging"}, nil)
			if m := len(e.markedComments(key)); m != 2 {
				t.Fatalf("%d marked comments after the re-send; want the two the lagging list let through", m)
			}
			e.gh.LagLists(0)
			var st contract.OperationStatus
			e.rest(t, "POST", "/api/v1/operations/"+key+"/reconcile", e.admin, "", nil, http.StatusOK, &st)
			left := e.markedComments(key)
			if len(left) != 1 || !strings.Contains(mustJSON(t, st.History), "found and deleted") {
				t.Fatalf("left %+v, downstream %+v, history %s; want the younger deleted and reported", left, st.Downstream, mustJSON(t, st.History))
			}
			var page struct {
				Comments []contract.Comment `json:"comments"`
			}
			e.rest(t, "GET", path, e.agent, "", nil, http.StatusOK, &page)
			if len(page.Comments) != 1 {
				t.Errorf("local comments = %d, want 1", len(page.Comments))
			}
		})

		t.Run("OperatorResolvesAHeldEditOverRESTAndRetriesAnswerIt", func(t *testing.T) {
			t.Parallel()
			e := startTracker(t, d)
			tk := e.trackedTicket(t)
			e.gh.FailEdits(githubtest.DropAfterCreate)
			e.gh.FailComments(githubtest.DropAfterCreate)
			e.gh.LagLists(time.Hour)
			edit, gone := uuid.NewString(), uuid.NewString()
			cs := e.Connect(t, e.agent)
			res := servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": edit, "id": tk.Key, "status": "closed"})
			if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; code != "outcome_unknown" {
				t.Fatalf("edit = %s; want outcome_unknown", code)
			}
			res = servertest.Call(t, cs, mcptools.ToolAddComment, map[string]any{"operation_id": gone, "id": tk.Key, "body": "Gone"})
			if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; code != "outcome_unknown" {
				t.Fatalf("comment = %s; want outcome_unknown", code)
			}
			// A person reopens the issue after the lost edit landed.
			e.gh.Touch(trackerRepo, 1, func(i *githubtest.Issue) { i.State = "open" })
			time.Sleep(3100 * time.Millisecond) // the settle window
			resp, raw := e.rest(t, "PATCH", "/api/v1/tickets/"+tk.Key, e.agent, edit, map[string]any{"status": "closed"}, 0, nil)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(raw, "outcome_unknown") {
				t.Fatalf("retry of the held edit = %d %s; want outcome_unknown", resp.StatusCode, raw)
			}
			var st contract.OperationStatus
			e.rest(t, "GET", "/api/v1/operations/"+edit, e.agent, "", nil, http.StatusOK, &st)
			if ds := st.Downstream; st.Status != "unknown" || ds.Status != "unknown" || ds.NextCheckAt != nil || !strings.Contains(ds.LastError, "resolve the operation") {
				t.Fatalf("held edit's status = %+v %+v; want unknown, no next check, and why in last_error", st, ds)
			}
			e.rest(t, "POST", "/api/v1/operations/"+edit+"/resolve", e.admin, "", map[string]any{"outcome": "succeeded", "external_id": "#1", "reason": "it landed; Bob reopened it"}, http.StatusOK, &st)
			if st.Status != "succeeded" || st.Version != 2 || !slices.ContainsFunc(st.History, func(h contract.History) bool { return h.Kind == "needs_operator" }) {
				t.Fatalf("resolved = %+v; want succeeded at version 2, with the hold in the history", st)
			}
			res = servertest.Call(t, cs, mcptools.ToolUpdateTicket, map[string]any{"operation_id": edit, "id": tk.Key, "status": "closed"})
			if out := servertest.Decode[mcptools.UpdateTicketOut](t, res); res.IsError || !out.Replayed || out.Version != 2 {
				t.Fatalf("MCP retry after resolve = %+v", out)
			}
			e.rest(t, "POST", "/api/v1/operations/"+gone+"/resolve", e.admin, "", map[string]any{"outcome": "not_created", "reason": "not on the issue"}, http.StatusOK, nil)
			res = servertest.Call(t, cs, mcptools.ToolAddComment, map[string]any{"operation_id": gone, "id": tk.Key, "body": "Gone"})
			if code := servertest.Decode[mcptools.ErrorOut](t, res).Error.Code; !res.IsError || code != "operation_failed" {
				t.Fatalf("MCP retry after not_created = %s; want operation_failed", code)
			}
			if n := e.gh.EditRequests(); n != 1 {
				t.Errorf("edit requests = %d, want 1: nothing re-sent over the person's change", n)
			}
			samples, err := scrapeMetrics(e.URL)
			if err != nil {
				t.Fatal(err)
			}
			for _, result := range []string{"held", "resolved"} {
				if got := samples[`ticketd_reconciliations_total{result="`+result+`"}`]; got < 1 {
					t.Errorf("ticketd_reconciliations_total{result=%q} = %v, want ≥ 1", result, got)
				}
			}
		})
	})
}
