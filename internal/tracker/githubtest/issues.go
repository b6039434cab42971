package githubtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

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

func (s *Server) issueOut(repo string, i *Issue) issueJSON {
	labels := make([]labelJSON, len(i.Labels))
	for k, l := range i.Labels {
		labels[k] = labelJSON{l}
	}
	return issueJSON{
		ID: i.Number * 1000, Number: i.Number, HTMLURL: cmp.Or(s.htmlURL, fmt.Sprintf("%s/%s/issues/%d", s.baseURL, repo, i.Number)),
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
	s.write(w, r, &s.faults, &s.creates, func(f Fault) (int, any) {
		i := s.insert(repo, req)
		if f == DuplicateCreate {
			s.insert(repo, req)
		}
		return http.StatusCreated, s.issueOut(repo, i)
	})
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
	s.write(w, r, &s.editFaults, &s.edits, func(Fault) (int, any) {
		i := s.find(r)
		if i == nil {
			return http.StatusNotFound, errorDoc("Not Found")
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
		return http.StatusOK, s.issueOut(repoOf(r), i)
	})
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

// Touch changes issue number of repo as a person on the tracker would
// (its updated_at moves on); false when there is no such issue.
func (s *Server) Touch(repo string, number int64, change func(*Issue)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	issues := s.repos[repo]
	if number < 1 || number > int64(len(issues)) {
		return false
	}
	change(issues[number-1])
	issues[number-1].UpdatedAt = now()
	return true
}
