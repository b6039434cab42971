// Package githubtest is a GitHub-shaped issue tracker for tests and local
// walkthroughs: the REST v3 routes ticketd uses (create, get, edit and list
// issues with labels/state/since and Link pagination; create, list, get
// and delete comments), kept in memory, with the faults that make real trackers
// file duplicates, for issue creates, comment creates and edits alike: an
// answer lost after the write was done, a write that completes after the
// client gave up, a 502 after writing, a write done twice, a list that lags
// behind writes, and secondary rate limits with Retry-After.
package githubtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"
)

// Fault is what the server does to one write request (an issue create, a
// comment create or an edit, each with its own queue).
type Fault int

// The faults a write can meet. The names say "create"; each means the same
// for a comment (the comment is the thing created) and an edit (the edit
// is applied).
const (
	// DropAfterCreate does the write, then closes the connection without
	// answering.
	DropAfterCreate Fault = iota + 1
	// SlowCreate waits Server.SlowDelay before writing and answering: a
	// client with a shorter timeout gives up while the write is still to come.
	SlowCreate
	// BadGatewayAfterCreate does the write, then answers 502.
	BadGatewayAfterCreate
	// SecondaryRateLimit answers 403 with GitHub's secondary-rate-limit
	// document and Retry-After: 1, writing nothing.
	SecondaryRateLimit
	// TooManyRequests answers 429 with Retry-After: 1, writing nothing.
	TooManyRequests
	// HangAfterCreate does the write, then answers nothing until the
	// client goes away (a process killed between sending and recording).
	HangAfterCreate
	// DuplicateCreate creates the issue or comment twice (a tracker that
	// let a duplicate through) and answers with the first; an edit is
	// applied once.
	DuplicateCreate
)

// Issue is an issue as the fake stores it.
type Issue struct {
	Number    int64
	Title     string
	Body      string
	State     string
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time
	Comments  []Comment
}

// Comment is a comment as the fake stores it.
type Comment struct {
	ID        int64
	Body      string
	CreatedAt time.Time
}

// Server is the fake tracker. Its methods are safe for concurrent use.
type Server struct {
	// Token, when set, must arrive as "Authorization: Bearer <Token>".
	Token string
	// SlowDelay is how long a SlowCreate waits (default 2s).
	SlowDelay time.Duration

	mu            sync.Mutex
	repos         map[string][]*Issue
	nextID        int64
	faults        []Fault // issue creates
	commentFaults []Fault
	editFaults    []Fault
	listLag       time.Duration
	creates       int
	comments      int
	edits         int
	baseURL       string
	htmlURL       string
	listCalls     int
	requests      int
}

// New returns an empty tracker; serve it with Handler or Start.
func New(token string) *Server {
	return &Server{Token: token, repos: map[string][]*Issue{}, SlowDelay: 2 * time.Second}
}

// Start serves s on a loopback httptest server, closed at the end of the
// test, and returns its API root (the api_url of a project).
func Start(tb interface {
	Helper()
	Cleanup(func())
}, s *Server) string {
	tb.Helper()
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	s.SetBaseURL(ts.URL + "/")
	return ts.URL + "/"
}

// SetBaseURL sets the root the issues' html_url and Link headers are built on.
func (s *Server) SetBaseURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.baseURL = strings.TrimSuffix(u, "/")
}

// AnswerHTMLURL makes every issue and comment carry u as its html_url, as
// a hostile tracker might (javascript:…); empty restores the real ones.
func (s *Server) AnswerHTMLURL(u string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.htmlURL = u
}

// FailCreates queues faults, one per coming create request, in order.
func (s *Server) FailCreates(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// FailComments queues faults, one per coming create-comment request.
func (s *Server) FailComments(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.commentFaults = append(s.commentFaults, f...)
}

// FailEdits queues faults, one per coming edit (PATCH) request.
func (s *Server) FailEdits(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.editFaults = append(s.editFaults, f...)
}

// LagLists hides, from every list of issues or comments, those created
// less than d ago (as an eventually consistent index would); 0 shows
// everything. A get of one issue is never lagged.
func (s *Server) LagLists(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listLag = d
}

// Issues returns a copy of the repository's issues, oldest first.
func (s *Server) Issues(repo string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Issue, 0, len(s.repos[repo]))
	for _, i := range s.repos[repo] {
		c := *i
		c.Comments = slices.Clone(i.Comments)
		out = append(out, c)
	}
	return out
}

// CreateRequests counts the create-issue requests received, faulted or not.
func (s *Server) CreateRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates
}

// CommentRequests counts the create-comment requests received.
func (s *Server) CommentRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.comments
}

// EditRequests counts the edit requests received.
func (s *Server) EditRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.edits
}

// Requests counts every request received, on any route.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// ListRequests counts the list-issues requests received.
func (s *Server) ListRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listCalls
}

// Handler serves the REST routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues", s.createIssue)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues", s.listIssues)
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}", s.getIssue)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/{number}", s.editIssue)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{number}/comments", s.createComment)
	// …/issues/{number}/comments and …/issues/comments/{id} overlap as
	// patterns: one route tells them apart.
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("a") == "comments":
			r.SetPathValue("id", r.PathValue("b"))
			s.getComment(w, r)
		case r.PathValue("b") == "comments":
			r.SetPathValue("number", r.PathValue("a"))
			s.listComments(w, r)
		default:
			writeError(w, http.StatusNotFound, "Not Found", "")
		}
	})
	mux.HandleFunc("DELETE /repos/{owner}/{repo}/issues/comments/{id}", s.deleteComment)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests++
		s.mu.Unlock()
		if s.Token != "" && r.Header.Get("Authorization") != "Bearer "+s.Token {
			writeError(w, http.StatusUnauthorized, "Bad credentials", "")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

func repoOf(r *http.Request) string { return r.PathValue("owner") + "/" + r.PathValue("repo") }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg, doc string) {
	body := map[string]string{"message": msg}
	if doc != "" {
		body["documentation_url"] = doc
	}
	writeJSON(w, status, body)
}

// now is GitHub's precision: whole seconds.
func now() time.Time { return time.Now().UTC().Truncate(time.Second) }

// write serves one write request under the next fault of queue: apply
// does the write (with s.mu held; twice is its business for
// DuplicateCreate) and returns the answer's status and document, which the
// fault may then withhold or replace. counter counts the request.
func (s *Server) write(w http.ResponseWriter, r *http.Request, queue *[]Fault, counter *int, apply func(f Fault) (int, any)) {
	s.mu.Lock()
	*counter++
	var fault Fault
	if len(*queue) > 0 {
		fault, *queue = (*queue)[0], (*queue)[1:]
	}
	switch fault {
	case SecondaryRateLimit, TooManyRequests:
		s.mu.Unlock()
		w.Header().Set("Retry-After", "1")
		if fault == TooManyRequests {
			writeError(w, http.StatusTooManyRequests, "Too many requests", "")
			return
		}
		writeError(w, http.StatusForbidden, "You have exceeded a secondary rate limit.",
			"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits")
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
		writeError(w, http.StatusBadGateway, "Server Error", "")
		return
	case HangAfterCreate:
		<-r.Context().Done()
		return
	}
	writeJSON(w, status, out)
}

// errorDoc is the document of an error answer.
func errorDoc(msg string) map[string]string { return map[string]string{"message": msg} }
