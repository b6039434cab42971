package githubtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"
)

type commentJSON struct {
	ID        int64     `json:"id"`
	HTMLURL   string    `json:"html_url"`
	IssueURL  string    `json:"issue_url"`
	Body      string    `json:"body"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (s *Server) commentOut(repo string, i *Issue, c Comment) commentJSON {
	return commentJSON{
		ID: c.ID, HTMLURL: cmp.Or(s.htmlURL, fmt.Sprintf("%s/%s/issues/%d#issuecomment-%d", s.baseURL, repo, i.Number, c.ID)),
		IssueURL: fmt.Sprintf("%s/repos/%s/issues/%d", s.baseURL, repo, i.Number),
		Body:     c.Body, CreatedAt: c.CreatedAt, UpdatedAt: c.CreatedAt,
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
	s.write(w, r, &s.commentFaults, &s.comments, func(f Fault) (int, any) {
		i := s.find(r)
		if i == nil {
			return http.StatusNotFound, errorDoc("Not Found")
		}
		c := s.addComment(i, req.Body)
		if f == DuplicateCreate {
			s.addComment(i, req.Body)
		}
		return http.StatusCreated, s.commentOut(repoOf(r), i, c)
	})
}

// addComment appends a comment to i; s.mu must be held.
func (s *Server) addComment(i *Issue, body string) Comment {
	s.nextID++
	c := Comment{ID: s.nextID, Body: body, CreatedAt: now()}
	i.Comments = append(i.Comments, c)
	i.UpdatedAt = c.CreatedAt
	return c
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
		if !c.CreatedAt.Before(since) && (s.listLag == 0 || time.Since(c.CreatedAt) >= s.listLag) {
			out = append(out, s.commentOut(repoOf(r), i, c))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// getComment is never lagged, like GitHub's get of one comment.
func (s *Server) getComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.repos[repoOf(r)] {
		if k := slices.IndexFunc(i.Comments, func(c Comment) bool { return c.ID == id }); k >= 0 {
			writeJSON(w, http.StatusOK, s.commentOut(repoOf(r), i, i.Comments[k]))
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found", "")
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, i := range s.repos[repoOf(r)] {
		if k := slices.IndexFunc(i.Comments, func(c Comment) bool { return c.ID == id }); k >= 0 {
			i.Comments = slices.Delete(i.Comments, k, k+1)
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	writeError(w, http.StatusNotFound, "Not Found", "")
}
