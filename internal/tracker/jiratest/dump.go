package jiratest

import (
	"encoding/json"
	"net/http"
)

// DumpHandler serves GET /_issues/{project}: every issue the fake holds for
// the project, oldest first, as Jira's GET of an issue shows it (id, key,
// fields.summary, fields.labels, fields.status, fields.comment.comments …),
// so a fault run can count issues and comments in the names of the API
// ticketd talks to. It asks for no credential: it is for looking, on
// loopback, never part of Jira's API.
func (s *Server) DumpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_issues/{project}", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		out := []map[string]any{}
		for _, i := range s.issues {
			if i.Project == r.PathValue("project") {
				out = append(out, s.issueOut(i, nil))
			}
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // the marker reads <!-- … -->, as Jira shows it
		_ = enc.Encode(out)
	})
	return mux
}
