package jiratest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Query is the JQL the fake understands: the clauses ticketd sends,
// `project = KEY AND labels = "ticketd-op-…"` (either clause alone too),
// joined by AND, optionally with `ORDER BY created ASC|DESC`.
type Query struct {
	Project string
	Labels  []string // every one must be on the issue
	Desc    bool
}

// ParseJQL reads the JQL subset of Query, refusing anything else with an
// error that says what it understands.
func ParseJQL(jql string) (Query, error) {
	var q Query
	rest := strings.TrimSpace(jql)
	if at := strings.Index(strings.ToUpper(rest), " ORDER BY "); at >= 0 {
		order := strings.Fields(strings.ToLower(rest[at+len(" ORDER BY "):]))
		rest = rest[:at]
		switch {
		case len(order) == 1 && order[0] == "created", len(order) == 2 && order[0] == "created" && order[1] == "asc":
		case len(order) == 2 && order[0] == "created" && order[1] == "desc":
			q.Desc = true
		default:
			return Query{}, fmt.Errorf("the fake orders by created only, not %q", strings.Join(order, " "))
		}
	}
	if rest == "" {
		return Query{}, fmt.Errorf("the fake needs at least one clause: project = KEY, labels = \"…\"")
	}
	for _, clause := range splitAnd(rest) {
		field, value, ok := strings.Cut(clause, "=")
		field, value = strings.ToLower(strings.TrimSpace(field)), strings.TrimSpace(value)
		if !ok || strings.ContainsAny(field, "!<>~") {
			return Query{}, fmt.Errorf("the fake understands field = value clauses joined by AND, not %q", clause)
		}
		v, err := unquote(value)
		if err != nil {
			return Query{}, err
		}
		switch field {
		case "project":
			if q.Project != "" {
				return Query{}, fmt.Errorf("project is named twice")
			}
			q.Project = v
		case "labels":
			q.Labels = append(q.Labels, v)
		default:
			return Query{}, fmt.Errorf("the fake searches by project and labels, not %q", field)
		}
	}
	return q, nil
}

// splitAnd splits on the keyword AND outside quotes.
func splitAnd(s string) []string {
	var out []string
	quoted, start := false, 0
	for k := 0; k < len(s); k++ {
		switch {
		case s[k] == '\\' && quoted:
			k++
		case s[k] == '"':
			quoted = !quoted
		case !quoted && k+5 <= len(s) && strings.EqualFold(s[k:k+5], " and "):
			out = append(out, s[start:k])
			start, k = k+5, k+4
		}
	}
	return append(out, s[start:])
}

// unquote reads a JQL value: a double-quoted string with \" and \\
// escapes, or a bare word of letters, digits, '-' and '_'.
func unquote(v string) (string, error) {
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		for k := 1; k < len(v); k++ {
			switch c := v[k]; {
			case c == '\\' && k+1 < len(v):
				k++
				b.WriteByte(v[k])
			case c == '"' && k == len(v)-1:
				return b.String(), nil
			case c == '"':
				return "", fmt.Errorf("text after the quoted value %s", v)
			default:
				b.WriteByte(c)
			}
		}
		return "", fmt.Errorf("an unterminated quoted value %s", v)
	}
	if v == "" || strings.IndexFunc(v, func(r rune) bool {
		return !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) >= 0 {
		return "", fmt.Errorf("the value %q must be quoted", v)
	}
	return v, nil
}

func (q Query) matches(i *Issue) bool {
	if q.Project != "" && !strings.EqualFold(q.Project, i.Project) {
		return false
	}
	for _, l := range q.Labels {
		if !slices.Contains(i.Labels, l) {
			return false
		}
	}
	return true
}

type searchRequest struct {
	JQL           string   `json:"jql"`
	Fields        []string `json:"fields"`
	MaxResults    int      `json:"maxResults"`
	NextPageToken string   `json:"nextPageToken"`
}

// search serves POST /rest/api/3/search/jql: pages of at most 100 issues,
// oldest first unless the JQL orders otherwise, chained by an opaque
// nextPageToken; issues younger than the index lag are not there yet.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req searchRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "The request body is not JSON.")
		return
	}
	q, err := ParseJQL(req.JQL)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Error in the JQL Query: "+err.Error())
		return
	}
	from := 0
	if req.NextPageToken != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(req.NextPageToken, "page-after-"))
		if err != nil || n < 0 || !strings.HasPrefix(req.NextPageToken, "page-after-") {
			writeError(w, http.StatusBadRequest, "The nextPageToken is not valid.")
			return
		}
		from = n
	}
	per := req.MaxResults
	if per <= 0 || per > 100 {
		per = min(max(per, 50), 100)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.searches++
	var match []*Issue
	for _, i := range s.issues {
		if (s.lag == 0 || time.Since(i.Created) >= s.lag) && q.matches(i) {
			match = append(match, i)
		}
	}
	if q.Desc {
		slices.Reverse(match)
	}
	from = min(from, len(match))
	to := min(from+per, len(match))
	out := struct {
		Issues        []map[string]any `json:"issues"`
		NextPageToken string           `json:"nextPageToken,omitempty"`
		IsLast        bool             `json:"isLast"`
	}{Issues: []map[string]any{}, IsLast: to == len(match)}
	for _, i := range match[from:to] {
		out.Issues = append(out.Issues, s.issueOut(i, cmpFields(req.Fields)))
	}
	if !out.IsLast {
		out.NextPageToken = fmt.Sprintf("page-after-%d", to)
	}
	writeJSON(w, http.StatusOK, out)
}

// cmpFields is search's field list: none asked for is the ID alone, as on
// Jira's search/jql.
func cmpFields(f []string) []string {
	if len(f) == 0 {
		return []string{"id"}
	}
	return f
}

// issueOut is i as Jira shows it, with the fields named in want (nil or
// "*all": every one); s.mu must be held.
func (s *Server) issueOut(i *Issue, want []string) map[string]any {
	all := map[string]any{
		"summary":     i.Summary,
		"description": i.Description,
		"labels":      i.Labels,
		"priority":    map[string]any{"name": i.Priority, "id": strconv.Itoa(slices.Index(Priorities, i.Priority) + 1)},
		"assignee":    s.userOut(i.Assignee),
		"status":      s.flow.statusOut(i.Status),
		"created":     i.Created.Format(jiraTime),
		"updated":     i.Updated.Format(jiraTime),
		"project":     map[string]any{"key": i.Project},
		"issuetype":   map[string]any{"name": i.IssueType},
		"comment":     s.commentPage(i, 0, len(i.Comments)),
	}
	if i.Labels == nil {
		all["labels"] = []string{}
	}
	if i.Description == nil {
		all["description"] = nil
	}
	fields := map[string]any{}
	for name, v := range all {
		if want == nil || slices.Contains(want, "*all") || slices.Contains(want, name) {
			fields[name] = v
		}
	}
	return map[string]any{"id": strconv.FormatInt(i.ID, 10), "key": i.Key, "self": s.self(i), "fields": fields}
}
