package jiratest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
)

func (s *Server) commentOut(i *Issue, c Comment) map[string]any {
	return map[string]any{
		"id":      strconv.FormatInt(c.ID, 10),
		"self":    fmt.Sprintf("%s/rest/api/3/issue/%d/comment/%d", s.baseURL, i.ID, c.ID),
		"author":  s.userOut(BotAccount),
		"body":    c.Body,
		"created": c.Created.Format(jiraTime),
		"updated": c.Created.Format(jiraTime),
	}
}

// commentPage is Jira's page of i's comments from startAt, oldest first;
// s.mu must be held.
func (s *Server) commentPage(i *Issue, startAt, maxResults int) map[string]any {
	from := min(startAt, len(i.Comments))
	to := min(from+maxResults, len(i.Comments))
	out := make([]map[string]any, 0, to-from)
	for _, c := range i.Comments[from:to] {
		out = append(out, s.commentOut(i, c))
	}
	return map[string]any{"startAt": from, "maxResults": maxResults, "total": len(i.Comments), "comments": out}
}

// listComments serves pages of at most 100 comments (startAt, maxResults),
// oldest first; Jira reads them from the issue, not the search index, so
// they are never lagged.
func (s *Server) listComments(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	startAt, _ := strconv.Atoi(q.Get("startAt"))
	per, _ := strconv.Atoi(q.Get("maxResults"))
	if per <= 0 || per > 100 {
		per = min(max(per, 50), 100)
	}
	if o := q.Get("orderBy"); o != "" && o != "created" && o != "+created" {
		writeError(w, http.StatusBadRequest, "The fake orders comments by created only.")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("key"))
	if i == nil {
		writeError(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	writeJSON(w, http.StatusOK, s.commentPage(i, max(startAt, 0), per))
}

func (s *Server) addComment(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Body json.RawMessage `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || !isADF(req.Body) {
		writeJSON(w, http.StatusBadRequest, fieldError("comment", "Comment body must be an Atlassian Document."))
		return
	}
	s.write(w, r, comments, func(f Fault) (int, any) {
		i := s.find(r.PathValue("key"))
		if i == nil {
			return http.StatusNotFound, errorDoc{ErrorMessages: []string{"Issue does not exist or you do not have permission to see it."}}
		}
		c := s.appendComment(i, req.Body)
		if f == DuplicateCreate {
			s.appendComment(i, req.Body)
		}
		return http.StatusCreated, s.commentOut(i, c)
	})
}

// appendComment adds a comment to i; s.mu must be held.
func (s *Server) appendComment(i *Issue, body json.RawMessage) Comment {
	s.nextID++
	c := Comment{ID: s.nextID, Body: slices.Clone(body), Created: now()}
	i.Comments = append(i.Comments, c)
	i.Updated = c.Created
	return c
}

func (s *Server) deleteComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("key"))
	if i == nil {
		writeError(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	k := slices.IndexFunc(i.Comments, func(c Comment) bool { return c.ID == id })
	if k < 0 {
		writeError(w, http.StatusNotFound, "Can not find a comment for the id: "+r.PathValue("id")+".")
		return
	}
	i.Comments = slices.Delete(i.Comments, k, k+1)
	w.WriteHeader(http.StatusNoContent)
}
