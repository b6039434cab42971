package githubtest

import (
	"encoding/json"
	"net/http"
)

// dumpedIssue is an issue as GitHub's API shows it, with its comments as
// GitHub's comments endpoint shows them.
type dumpedIssue struct {
	issueJSON
	Comments []commentJSON `json:"comments"`
}

// DumpHandler serves GET /_issues/{owner}/{repo}: every issue the fake
// holds for the repository, oldest first, each with its comments, in
// GitHub's JSON (number, title, body, state, labels …), so what a newcomer
// looks at reads as the API ticketd talks to. It asks for no token: it is
// for looking, on loopback, never part of GitHub's API.
func (s *Server) DumpHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_issues/{owner}/{repo}", func(w http.ResponseWriter, r *http.Request) {
		repo := repoOf(r)
		s.mu.Lock()
		out := make([]dumpedIssue, 0, len(s.repos[repo]))
		for _, i := range s.repos[repo] {
			d := dumpedIssue{issueJSON: s.issueOut(repo, i), Comments: make([]commentJSON, 0, len(i.Comments))}
			for _, c := range i.Comments {
				d.Comments = append(d.Comments, s.commentOut(repo, i, c))
			}
			out = append(out, d)
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // the marker reads <!-- … -->, as GitHub shows it
		_ = enc.Encode(out)
	})
	return mux
}
