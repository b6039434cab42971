// Package githubtest is a GitHub-shaped issue tracker for tests and local
// walkthroughs: the REST v3 routes ticketd uses (create, get, edit and list
// issues with labels/state/since and Link pagination; create and list
// comments), kept in memory, with the faults that make real trackers file
// duplicates: an answer lost after the issue was created, a create that
// completes after the client gave up, a 502 after creating, a list that
// lags behind creates, and secondary rate limits with Retry-After.
package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Fault is what the server does to one create request.
type Fault int

// The faults a create can meet.
const (
	// DropAfterCreate creates the issue, then closes the connection without
	// answering.
	DropAfterCreate Fault = iota + 1
	// SlowCreate waits Server.SlowDelay before creating and answering: a
	// client with a shorter timeout gives up while the issue is still to come.
	SlowCreate
	// BadGatewayAfterCreate creates the issue, then answers 502.
	BadGatewayAfterCreate
	// SecondaryRateLimit answers 403 with GitHub's secondary-rate-limit
	// document and Retry-After: 1, creating nothing.
	SecondaryRateLimit
	// TooManyRequests answers 429 with Retry-After: 1, creating nothing.
	TooManyRequests
	// HangAfterCreate creates the issue, then answers nothing until the
	// client goes away (a process killed between sending and recording).
	HangAfterCreate
	// DuplicateCreate creates the issue twice (a tracker that let a
	// duplicate through) and answers with the first.
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

	mu        sync.Mutex
	repos     map[string][]*Issue
	nextID    int64
	faults    []Fault
	listLag   time.Duration
	creates   int
	baseURL   string
	listCalls int
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

// FailCreates queues faults, one per coming create request, in order.
func (s *Server) FailCreates(f ...Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f...)
}

// LagLists hides, from every list, issues created less than d ago (as an
// eventually consistent index would); 0 shows everything.
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
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{number}/comments", s.listComments)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

type issueJSON struct {
	ID        int64       `json:"id"`
	Number    int64       `json:"number"`
	HTMLURL   string      `json:"html_url"`
	Title     string      `json:"title"`
	Body      string      `json:"body"`
	State     string      `json:"state"`
	Labels    []labelJSON `json:"labels"`
	CreatedAt time.Time   `json:"created_at"`
	UpdatedAt time.Time   `json:"updated_at"`
}

type labelJSON struct {
	Name string `json:"name"`
}

type commentJSON struct {
	ID        int64     `json:"id"`
	HTMLURL   string    `json:"html_url"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Server) issueOut(repo string, i *Issue) issueJSON {
	labels := make([]labelJSON, len(i.Labels))
	for k, l := range i.Labels {
		labels[k] = labelJSON{l}
	}
	return issueJSON{
		ID: i.Number * 1000, Number: i.Number, HTMLURL: fmt.Sprintf("%s/%s/issues/%d", s.baseURL, repo, i.Number),
		Title: i.Title, Body: i.Body, State: i.State, Labels: labels, CreatedAt: i.CreatedAt, UpdatedAt: i.UpdatedAt,
	}
}

type issueRequest struct {
	Title  *string   `json:"title"`
	Body   *string   `json:"body"`
	State  *string   `json:"state"`
	Labels *[]string `json:"labels"`
}

// insert files an issue; s.mu must be held.
func (s *Server) insert(repo string, req issueRequest) *Issue {
	t := now()
	i := &Issue{Number: int64(len(s.repos[repo]) + 1), State: "open", CreatedAt: t, UpdatedAt: t}
	if req.Title != nil {
		i.Title = *req.Title
	}
	if req.Body != nil {
		i.Body = *req.Body
	}
	if req.Labels != nil {
		i.Labels = slices.Clone(*req.Labels)
	}
	s.repos[repo] = append(s.repos[repo], i)
	return i
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request) {
	var req issueRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Title == nil || *req.Title == "" {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed: title is required", "")
		return
	}
	repo := repoOf(r)
	s.mu.Lock()
	s.creates++
	var fault Fault
	if len(s.faults) > 0 {
		fault, s.faults = s.faults[0], s.faults[1:]
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
		// Not tied to the request: the issue lands even though the client
		// has given up, as a slow backend's would.
		time.Sleep(delay)
		s.mu.Lock()
	}
	i := s.insert(repo, req)
	if fault == DuplicateCreate {
		s.insert(repo, req)
	}
	out := s.issueOut(repo, i)
	s.mu.Unlock()
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
	writeJSON(w, http.StatusCreated, out)
}

// find returns the issue named by the request; s.mu must be held.
func (s *Server) find(r *http.Request) *Issue {
	n, err := strconv.ParseInt(r.PathValue("number"), 10, 64)
	issues := s.repos[repoOf(r)]
	if err != nil || n < 1 || n > int64(len(issues)) {
		return nil
	}
	return issues[n-1]
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r)
	if i == nil {
		writeError(w, http.StatusNotFound, "Not Found", "")
		return
	}
	writeJSON(w, http.StatusOK, s.issueOut(repoOf(r), i))
}

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request) {
	var req issueRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON", "")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r)
	if i == nil {
		writeError(w, http.StatusNotFound, "Not Found", "")
		return
	}
	if req.Title != nil {
		i.Title = *req.Title
	}
	if req.Body != nil {
		i.Body = *req.Body
	}
	if req.State != nil {
		i.State = *req.State
	}
	if req.Labels != nil {
		i.Labels = slices.Clone(*req.Labels)
	}
	i.UpdatedAt = now()
	writeJSON(w, http.StatusOK, s.issueOut(repoOf(r), i))
}

func (s *Server) listIssues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var since time.Time
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			writeError(w, http.StatusUnprocessableEntity, "Validation Failed: since", "")
			return
		}
		since = t
	}
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var labels []string
	if v := q.Get("labels"); v != "" {
		labels = strings.Split(v, ",")
	}
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	if perPage <= 0 || perPage > 100 {
		perPage = 30
	}
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)

	repo := repoOf(r)
	s.mu.Lock()
	s.listCalls++
	var match []issueJSON
	for _, i := range s.repos[repo] {
		switch {
		case s.listLag > 0 && time.Since(i.CreatedAt) < s.listLag:
			continue
		case state != "all" && i.State != state:
			continue
		case i.UpdatedAt.Before(since):
			continue
		}
		if !containsAll(i.Labels, labels) {
			continue
		}
		match = append(match, s.issueOut(repo, i))
	}
	s.mu.Unlock()
	if q.Get("direction") != "asc" {
		slices.Reverse(match)
	}
	from := min((page-1)*perPage, len(match))
	to := min(from+perPage, len(match))
	if to < len(match) {
		next := *r.URL
		nq := next.Query()
		nq.Set("page", strconv.Itoa(page+1))
		next.RawQuery = nq.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.baseURL, (&url.URL{Path: next.Path, RawQuery: next.RawQuery}).String()))
	}
	writeJSON(w, http.StatusOK, match[from:to])
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func (s *Server) commentOut(repo string, i *Issue, c Comment) commentJSON {
	return commentJSON{
		ID: c.ID, HTMLURL: fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", s.baseURL, repo, i.Number, c.ID),
		Body: c.Body, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt,
	}
}

func (s *Server) createComment(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Body == "" {
		writeError(w, http.StatusUnprocessableEntity, "Validation Failed: body is required", "")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r)
	if i == nil {
		writeError(w, http.StatusNotFound, "Not Found", "")
		return
	}
	s.nextID++
	c := Comment{ID: s.nextID, Body: req.Body, CreatedAt: now()}
	i.Comments = append(i.Comments, c)
	i.UpdatedAt = c.CreatedAt
	writeJSON(w, http.StatusCreated, s.commentOut(repoOf(r), i, c))
}

func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if v := r.URL.Query().Get("since"); v != "" {
		since, _ = time.Parse(time.RFC3339, v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r)
	if i == nil {
		writeError(w, http.StatusNotFound, "Not Found", "")
		return
	}
	out := []commentJSON{}
	for _, c := range i.Comments {
		if !c.CreatedAt.Before(since) {
			out = append(out, s.commentOut(repoOf(r), i, c))
		}
	}
	writeJSON(w, http.StatusOK, out)
}
