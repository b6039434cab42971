package jiratest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Transition is one edge of a workflow: from any of From (empty: from every
// status) to To.
type Transition struct {
	ID   string
	Name string
	From []string
	To   string
}

// Workflow is the statuses an issue can be in (the first is where a new
// issue starts) and the transitions between them.
type Workflow struct {
	Statuses    []string
	Transitions []Transition
}

// DefaultWorkflow is Jira's simplified software workflow: To Do, In
// Progress, Done, with a way forward and a way back.
func DefaultWorkflow() Workflow {
	return Workflow{
		Statuses: []string{"To Do", "In Progress", "Done"},
		Transitions: []Transition{
			{ID: "11", Name: "Start progress", From: []string{"To Do"}, To: "In Progress"},
			{ID: "21", Name: "Done", From: []string{"To Do", "In Progress"}, To: "Done"},
			{ID: "31", Name: "Stop progress", From: []string{"In Progress"}, To: "To Do"},
			{ID: "41", Name: "Reopen", From: []string{"Done"}, To: "To Do"},
		},
	}
}

// SetWorkflow replaces the workflow of every project; issues keep their
// status.
func (s *Server) SetWorkflow(f Workflow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flow = f
}

// available lists the transitions out of status.
func (f Workflow) available(status string) []Transition {
	var out []Transition
	for _, t := range f.Transitions {
		if len(t.From) == 0 || slices.Contains(t.From, status) {
			out = append(out, t)
		}
	}
	return out
}

// statusOut is a status as Jira shows it, with its category (new for the
// first status, done for a status named Done or Closed, else in progress).
func (f Workflow) statusOut(name string) map[string]any {
	k := slices.Index(f.Statuses, name)
	cat := "indeterminate"
	switch {
	case k == 0:
		cat = "new"
	case strings.EqualFold(name, "Done"), strings.EqualFold(name, "Closed"):
		cat = "done"
	}
	return map[string]any{"id": strconv.Itoa(k + 1), "name": name, "statusCategory": map[string]any{"key": cat}}
}

func (s *Server) listTransitions(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("key"))
	if i == nil {
		writeError(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	out := []map[string]any{}
	for _, t := range s.flow.available(i.Status) {
		out = append(out, map[string]any{"id": t.ID, "name": t.Name, "to": s.flow.statusOut(t.To), "isAvailable": true})
	}
	writeJSON(w, http.StatusOK, map[string]any{"transitions": out})
}

func (s *Server) transition(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Transition struct {
			ID string `json:"id"`
		} `json:"transition"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Transition.ID == "" {
		writeError(w, http.StatusBadRequest, "A transition id is required.")
		return
	}
	s.write(w, r, transitions, func(Fault) (int, any) {
		i := s.find(r.PathValue("key"))
		if i == nil {
			return http.StatusNotFound, errorDoc{ErrorMessages: []string{"Issue does not exist or you do not have permission to see it."}}
		}
		k := slices.IndexFunc(s.flow.available(i.Status), func(t Transition) bool { return t.ID == req.Transition.ID })
		if k < 0 {
			return http.StatusBadRequest, errorDoc{ErrorMessages: []string{"Transition id '" + req.Transition.ID + "' is not valid for this issue."}, Errors: map[string]string{}}
		}
		i.Status, i.Updated = s.flow.available(i.Status)[k].To, now()
		return http.StatusNoContent, nil
	})
}

// User is an account of the fake's site.
type User struct {
	AccountID   string
	DisplayName string
	Email       string
}

// BotAccount is the account of the credential ticketd uses: every comment's
// author.
const BotAccount = "5b10ac8d82e05b22cc7d4ef5"

// AddUser adds an account that user search finds and an assignee may name.
func (s *Server) AddUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users = append(s.users, u)
}

// hasUser reports whether accountID is a user's; s.mu must be held.
func (s *Server) hasUser(accountID string) bool {
	return slices.ContainsFunc(s.users, func(u User) bool { return u.AccountID == accountID })
}

// userOut is an account as Jira shows it (nil for none); s.mu must be held.
func (s *Server) userOut(accountID string) any {
	if accountID == "" {
		return nil
	}
	u := User{AccountID: accountID, DisplayName: "ticketd"}
	if k := slices.IndexFunc(s.users, func(u User) bool { return u.AccountID == accountID }); k >= 0 {
		u = s.users[k]
	}
	out := map[string]any{"accountId": u.AccountID, "displayName": u.DisplayName, "active": true, "accountType": "atlassian"}
	if u.Email != "" {
		out["emailAddress"] = u.Email
	}
	return out
}

// searchUsers matches query against the start of a display name's words
// and of an email address, case-insensitively, as Jira's user search does.
func (s *Server) searchUsers(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	query := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("query")))
	if query == "" {
		writeError(w, http.StatusBadRequest, "One of 'query' or 'accountId' query parameters must be provided.")
		return
	}
	out := []any{}
	for _, u := range s.users {
		match := strings.HasPrefix(strings.ToLower(u.Email), query)
		for _, word := range strings.Fields(strings.ToLower(u.DisplayName)) {
			match = match || strings.HasPrefix(word, query)
		}
		if match || strings.HasPrefix(strings.ToLower(u.DisplayName), query) {
			out = append(out, s.userOut(u.AccountID))
		}
	}
	writeJSON(w, http.StatusOK, out)
}
