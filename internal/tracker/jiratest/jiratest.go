// Package jiratest is a Jira-Cloud-shaped issue tracker for tests and local
// walkthroughs: the REST v3 routes ticketd may call (DESIGN §22: create, get
// and edit an issue; search by JQL; list, add and delete comments; a
// workflow's transitions; user search), kept in memory, with the faults
// that make real trackers file duplicates (the GitHub fake's set: an answer
// lost after the write, a write that completes after the client gave up, a
// 5xx after writing, a write done twice, 429 with Retry-After, 401 and 403)
// and Jira's own: a search index that lags behind creates while a get by
// key is consistent.
package jiratest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Fault is what the server does to one write request (an issue create, a
// comment create, an edit or a transition, each with its own queue).
type Fault int

// The faults a write can meet. The names say "create", as the GitHub fake's
// do; each means the same for a comment (the comment is the thing created),
// an edit and a transition (the change is applied).
const (
	// DropAfterCreate does the write, then closes the connection without
	// answering.
	DropAfterCreate Fault = iota + 1
	// SlowCreate waits Server.SlowDelay before writing and answering.
	SlowCreate
	// BadGatewayAfterCreate does the write, then answers 502.
	BadGatewayAfterCreate
	// TooManyRequests answers 429 with Retry-After: 1, writing nothing.
	TooManyRequests
	// HangAfterCreate does the write, then answers nothing until the client
	// goes away.
	HangAfterCreate
	// DuplicateCreate creates the issue or comment twice and answers with
	// the first; an edit or a transition is applied once.
	DuplicateCreate
	// Unauthorized answers 401, writing nothing (a revoked token).
	Unauthorized
	// Forbidden answers 403, writing nothing (a user without permission).
	Forbidden
)

// Server is the fake tracker. Its methods are safe for concurrent use.
type Server struct {
	// Email and APIToken, when APIToken is set, are what Basic auth must
	// carry; PAT, when set, is what a Bearer token must be. With neither,
	// every request is admitted.
	Email, APIToken, PAT string
	// SlowDelay is how long a SlowCreate waits (default 2s).
	SlowDelay time.Duration

	mu       sync.Mutex
	issues   []*Issue // every project's, in creation order
	perKey   map[string]int64
	nextID   int64
	flow     Workflow
	users    []User
	queues   map[queue][]Fault
	counts   map[queue]int
	searches int
	lookups  int // user searches
	requests int // every route's
	lag      time.Duration
	baseURL  string
}

// queue names a write kind's fault queue and request counter.
type queue int

const (
	creates queue = iota
	comments
	edits
	transitions
)

// New returns an empty tracker that admits Basic auth as email:apiToken
// (no auth at all when apiToken is empty), with DefaultWorkflow and no
// users; serve it with Handler or Start.
func New(email, apiToken string) *Server {
	return &Server{
		Email: email, APIToken: apiToken, SlowDelay: 2 * time.Second,
		perKey: map[string]int64{}, nextID: 10000, flow: DefaultWorkflow(),
		queues: map[queue][]Fault{}, counts: map[queue]int{},
	}
}

// Start serves s on a loopback httptest server, closed at the end of the
// test, and returns its site (the "site" of a Jira backend).
func Start(tb interface {
	Helper()
	Cleanup(func())
}, s *Server) string {
	tb.Helper()
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	s.SetBaseURL(ts.URL)
	return ts.URL
}

// SetBaseURL sets the site the answers' self links are built on.
func (s *Server) SetBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.baseURL = strings.TrimSuffix(u, "/")
}

func (s *Server) fail(q queue, f []Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queues[q] = append(s.queues[q], f...)
}

// FailCreates queues faults, one per coming create-issue request, in order.
func (s *Server) FailCreates(f ...Fault) { s.fail(creates, f) }

// FailComments queues faults, one per coming add-comment request.
func (s *Server) FailComments(f ...Fault) { s.fail(comments, f) }

// FailEdits queues faults, one per coming edit (PUT) request.
func (s *Server) FailEdits(f ...Fault) { s.fail(edits, f) }

// FailTransitions queues faults, one per coming transition (POST) request.
func (s *Server) FailTransitions(f ...Fault) { s.fail(transitions, f) }

// LagSearch hides, from search/jql, the issues created less than d ago (as
// Jira's index does); 0 shows everything. A get by key is never lagged.
func (s *Server) LagSearch(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lag = d
}

func (s *Server) count(q queue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[q]
}

// CreateRequests counts the create-issue requests received, faulted or not.
func (s *Server) CreateRequests() int { return s.count(creates) }

// CommentRequests counts the add-comment requests received.
func (s *Server) CommentRequests() int { return s.count(comments) }

// EditRequests counts the edit requests received.
func (s *Server) EditRequests() int { return s.count(edits) }

// TransitionRequests counts the transition requests received.
func (s *Server) TransitionRequests() int { return s.count(transitions) }

// SearchRequests counts the search/jql requests received.
func (s *Server) SearchRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.searches
}

// UserSearchRequests counts the user/search requests received.
func (s *Server) UserSearchRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups
}

// Requests counts every request received, on any route.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Handler serves the REST v3 routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /rest/api/3/issue", s.createIssue)
	mux.HandleFunc("POST /rest/api/3/search/jql", s.search)
	mux.HandleFunc("GET /rest/api/3/issue/{key}", s.getIssue)
	mux.HandleFunc("PUT /rest/api/3/issue/{key}", s.editIssue)
	mux.HandleFunc("GET /rest/api/3/issue/{key}/comment", s.listComments)
	mux.HandleFunc("POST /rest/api/3/issue/{key}/comment", s.addComment)
	mux.HandleFunc("DELETE /rest/api/3/issue/{key}/comment/{id}", s.deleteComment)
	mux.HandleFunc("GET /rest/api/3/issue/{key}/transitions", s.listTransitions)
	mux.HandleFunc("POST /rest/api/3/issue/{key}/transitions", s.transition)
	mux.HandleFunc("GET /rest/api/3/user/search", s.searchUsers)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		if !s.authorized(r.Header.Get("Authorization")) {
			writeError(w, http.StatusUnauthorized, "Client must be authenticated to access this resource.")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func (s *Server) authorized(h string) bool {
	if s.APIToken == "" && s.PAT == "" {
		return true
	}
	if s.PAT != "" && h == "Bearer "+s.PAT {
		return true
	}
	basic := base64.StdEncoding.EncodeToString([]byte(s.Email + ":" + s.APIToken))
	return s.APIToken != "" && h == "Basic "+basic
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// errorDoc is Jira's error collection: messages and per-field errors.
type errorDoc struct {
	ErrorMessages []string          `json:"errorMessages"`
	Errors        map[string]string `json:"errors"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorDoc{ErrorMessages: []string{msg}, Errors: map[string]string{}})
}

func fieldError(field, msg string) errorDoc {
	return errorDoc{ErrorMessages: []string{}, Errors: map[string]string{field: msg}}
}

// write serves one write request under the next fault of q: apply does the
// write (with s.mu held; twice is its business for DuplicateCreate) and
// returns the answer's status and document (nil: no body), which the fault
// may then withhold or replace.
func (s *Server) write(w http.ResponseWriter, r *http.Request, q queue, apply func(f Fault) (int, any)) {
	s.mu.Lock()
	s.counts[q]++
	var fault Fault
	if len(s.queues[q]) > 0 {
		fault, s.queues[q] = s.queues[q][0], s.queues[q][1:]
	}
	switch fault {
	case TooManyRequests:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "Rate limit exceeded.")
		return
	case Unauthorized:
		s.mu.Unlock()
		writeError(w, http.StatusUnauthorized, "Client must be authenticated to access this resource.")
		return
	case Forbidden:
		s.mu.Unlock()
		writeError(w, http.StatusForbidden, "You do not have permission to do this.")
		return
	case SlowCreate:
		delay := s.SlowDelay
		s.mu.Unlock()
		// Not tied to the request: the write lands even though the client
		// has given up, as a slow backend's would.
		time.Sleep(delay)
		s.mu.Lock()
	}
	status, out := apply(fault)
	s.mu.Unlock()
	if status >= 300 {
		writeJSON(w, status, out)
		return
	}
	switch fault {
	case DropAfterCreate:
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler)
	case BadGatewayAfterCreate:
		writeError(w, http.StatusBadGateway, "Bad Gateway")
		return
	case HangAfterCreate:
		<-r.Context().Done()
		return
	}
	if out == nil {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}

// jiraTime is Jira's timestamp form: milliseconds and a numeric zone.
const jiraTime = "2006-01-02T15:04:05.000-0700"

func now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
