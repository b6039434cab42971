package jiratest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Issue is an issue as the fake stores it; Description and comment bodies
// are ADF documents as they were sent.
type Issue struct {
	ID          int64
	Key         string // PROJECT-n
	Project     string
	IssueType   string
	Summary     string
	Description json.RawMessage
	Labels      []string
	Priority    string
	Assignee    string // an account ID, or empty
	Status      string
	Created     time.Time
	Updated     time.Time
	Comments    []Comment
}

// Comment is a comment as the fake stores it.
type Comment struct {
	ID      int64
	Body    json.RawMessage
	Created time.Time
}

// Priorities are the priority names the fake knows, Jira's defaults.
var Priorities = []string{"Lowest", "Low", "Medium", "High", "Highest"}

// IssueTypes are the issue types every project of the fake has.
var IssueTypes = []string{"Task", "Bug", "Story"}

var projectKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,9}$`)

// Issues returns a copy of the project's issues, oldest first.
func (s *Server) Issues(project string) []Issue {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Issue
	for _, i := range s.issues {
		if i.Project == project {
			c := *i
			c.Labels, c.Comments = slices.Clone(i.Labels), slices.Clone(i.Comments)
			out = append(out, c)
		}
	}
	return out
}

// Touch changes the issue key as a person on the tracker would (its
// updated time moves on); false when there is no such issue.
func (s *Server) Touch(key string, change func(*Issue)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(key)
	if i == nil {
		return false
	}
	change(i)
	i.Updated = now()
	return true
}

// find returns the issue with key (or numeric ID) k; s.mu must be held.
func (s *Server) find(k string) *Issue {
	for _, i := range s.issues {
		if i.Key == k || strconv.FormatInt(i.ID, 10) == k {
			return i
		}
	}
	return nil
}

type fieldsRequest struct {
	Fields map[string]json.RawMessage     `json:"fields"`
	Update map[string][]map[string]string `json:"update"`
}

func (s *Server) createIssue(w http.ResponseWriter, r *http.Request) {
	var req fieldsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Fields == nil {
		writeError(w, http.StatusBadRequest, "The request body is not a JSON object with fields.")
		return
	}
	s.write(w, r, creates, func(f Fault) (int, any) {
		i := &Issue{Status: s.flow.Statuses[0], Priority: "Medium"}
		if doc, ok := s.applyFields(i, req.Fields, true); !ok {
			return http.StatusBadRequest, doc
		}
		s.insert(i)
		if f == DuplicateCreate {
			twin := *i
			twin.Labels = slices.Clone(i.Labels)
			s.insert(&twin)
		}
		return http.StatusCreated, map[string]string{"id": strconv.FormatInt(i.ID, 10), "key": i.Key, "self": s.self(i)}
	})
}

// insert files i under the next ID and key of its project; s.mu must be held.
func (s *Server) insert(i *Issue) {
	s.nextID++
	s.perKey[i.Project]++
	i.ID, i.Key = s.nextID, fmt.Sprintf("%s-%d", i.Project, s.perKey[i.Project])
	i.Created = now()
	i.Updated = i.Created
	s.issues = append(s.issues, i)
}

func (s *Server) self(i *Issue) string {
	return fmt.Sprintf("%s/rest/api/3/issue/%d", s.baseURL, i.ID)
}

// applyFields sets i's fields from a create or an edit, refusing, as Jira
// does, a field it does not know or that cannot be set that way; s.mu
// must be held.
func (s *Server) applyFields(i *Issue, fields map[string]json.RawMessage, creating bool) (errorDoc, bool) {
	type named struct {
		Key       string  `json:"key"`
		Name      string  `json:"name"`
		AccountID *string `json:"accountId"`
	}
	for name, raw := range fields {
		var err error
		var n named
		switch name {
		case "summary":
			err = json.Unmarshal(raw, &i.Summary)
			if err == nil && strings.TrimSpace(i.Summary) == "" {
				return fieldError("summary", "You must specify a summary of the issue."), false
			}
		case "description":
			if !isADF(raw) {
				return fieldError("description", "Operation value must be an Atlassian Document (see the Atlassian Document Format)."), false
			}
			i.Description = slices.Clone(raw)
		case "labels":
			var labels []string
			if err = json.Unmarshal(raw, &labels); err == nil && slices.ContainsFunc(labels, badLabel) {
				return fieldError("labels", "The label can't contain spaces."), false
			}
			i.Labels = labels
		case "priority":
			if err = json.Unmarshal(raw, &n); err == nil && !slices.Contains(Priorities, n.Name) {
				return fieldError("priority", "Specify a valid value for priority."), false
			}
			i.Priority = n.Name
		case "assignee":
			if string(raw) == "null" {
				i.Assignee = ""
				continue
			}
			if err = json.Unmarshal(raw, &n); err == nil && (n.AccountID == nil || !s.hasUser(*n.AccountID)) {
				return fieldError("assignee", "Specify a valid accountId for the assignee."), false
			}
			i.Assignee = *n.AccountID
		case "project", "issuetype":
			if !creating {
				return fieldError(name, fmt.Sprintf("Field '%s' cannot be set. It is not on the appropriate screen, or unknown.", name)), false
			}
			if err = json.Unmarshal(raw, &n); err != nil {
				break
			}
			if name == "project" {
				if !projectKey.MatchString(n.Key) {
					return fieldError("project", "Specify a valid project ID or key."), false
				}
				i.Project = n.Key
			} else if i.IssueType = n.Name; !slices.Contains(IssueTypes, n.Name) {
				return fieldError("issuetype", "Specify a valid issue type."), false
			}
		default:
			return fieldError(name, fmt.Sprintf("Field '%s' cannot be set. It is not on the appropriate screen, or unknown.", name)), false
		}
		if err != nil {
			return fieldError(name, "The value is not of the field's type."), false
		}
	}
	switch {
	case creating && i.Project == "":
		return fieldError("project", "Specify a valid project ID or key."), false
	case creating && i.IssueType == "":
		return fieldError("issuetype", "Specify a valid issue type."), false
	case creating && i.Summary == "":
		return fieldError("summary", "You must specify a summary of the issue."), false
	}
	return errorDoc{}, true
}

func badLabel(l string) bool { return l == "" || strings.ContainsAny(l, " \t\n") || len(l) > 255 }

// isADF reports whether raw is an Atlassian Document: {"type":"doc","version":1,"content":[…]}.
func isADF(raw json.RawMessage) bool {
	var d struct {
		Type    string            `json:"type"`
		Version int               `json:"version"`
		Content []json.RawMessage `json:"content"`
	}
	return json.Unmarshal(raw, &d) == nil && d.Type == "doc" && d.Version == 1 && d.Content != nil
}

func (s *Server) getIssue(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(r.PathValue("key"))
	if i == nil {
		writeError(w, http.StatusNotFound, "Issue does not exist or you do not have permission to see it.")
		return
	}
	var want []string
	if f := r.URL.Query().Get("fields"); f != "" {
		want = strings.Split(f, ",")
	}
	writeJSON(w, http.StatusOK, s.issueOut(i, want))
}

func (s *Server) editIssue(w http.ResponseWriter, r *http.Request) {
	var req fieldsRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "The request body is not JSON.")
		return
	}
	s.write(w, r, edits, func(Fault) (int, any) {
		i := s.find(r.PathValue("key"))
		if i == nil {
			return http.StatusNotFound, errorDoc{ErrorMessages: []string{"Issue does not exist or you do not have permission to see it."}}
		}
		edited := *i
		edited.Labels = slices.Clone(i.Labels)
		if doc, ok := s.applyFields(&edited, req.Fields, false); !ok {
			return http.StatusBadRequest, doc
		}
		for field, ops := range req.Update {
			if field != "labels" {
				return http.StatusBadRequest, fieldError(field, "This field cannot be updated this way.")
			}
			for _, op := range ops {
				if l, ok := op["add"]; ok && !badLabel(l) && !slices.Contains(edited.Labels, l) {
					edited.Labels = append(edited.Labels, l)
				}
				if l, ok := op["remove"]; ok {
					edited.Labels = slices.DeleteFunc(edited.Labels, func(x string) bool { return x == l })
				}
			}
		}
		edited.Updated = now()
		*i = edited
		return http.StatusNoContent, nil
	})
}
