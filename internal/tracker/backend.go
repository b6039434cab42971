package tracker

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
)

// §22's defaults for a Jira backend that names none.
var (
	DefaultJiraIssueType   = "Task"
	DefaultJiraStatusMap   = map[string]string{"open": "To Do", "in_progress": "In Progress", "resolved": "Done", "closed": "Done"}
	DefaultJiraPriorityMap = map[string]string{"low": "Low", "normal": "Medium", "high": "High", "urgent": "Highest"}
)

// HoldsPriorityAndAssignee reports whether the backend's issues carry a
// ticket's priority and assignee, so that changing either is an edit of
// the issue: Jira's do (priority_map, and an account found by the
// assignee's email). GitHub's do not: a GitHub-backed ticket's priority and
// assignee live on its local row alone.
func (b Backend) HoldsPriorityAndAssignee() bool { return b.Kind == KindJira }

// PriorityName is the tracker's name for a ticket priority (low, normal,
// high, urgent), what an issue's Priority shows once it has it: Jira maps
// each through the backend's priority_map, a priority it leaves out
// through §22's default; "" for a tracker that holds no priority.
func (b Backend) PriorityName(priority string) string {
	if b.Kind != KindJira {
		return ""
	}
	if name, ok := b.PriorityMap[priority]; ok {
		return name
	}
	return DefaultJiraPriorityMap[priority]
}

// Where names where the backend's issues live, as people write it: a
// GitHub repository (owner/name) or a Jira project key (OPS).
func (b Backend) Where() string {
	if b.Kind == KindJira {
		return b.ProjectKey
	}
	return b.Repository
}

// ExternalID is how a ticket names the issue ref of the backend: GitHub's
// owner/name#12, Jira's key (OPS-12), which names its project already.
func (b Backend) ExternalID(ref string) string {
	if b.Kind == KindJira {
		return ref
	}
	return b.Repository + "#" + ref
}

var jiraKey = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)-([1-9][0-9]{0,17})$`)

// ParseRef reads what a caller or a stored ticket names as an issue of the
// backend (GitHub: owner/name#12, #12 or 12; Jira: OPS-12) as its Ref. The
// error says what the backend takes.
func (b Backend) ParseRef(s string) (string, error) {
	if b.Kind == KindJira {
		m := jiraKey.FindStringSubmatch(strings.TrimSpace(s))
		if m == nil || m[1] != b.ProjectKey {
			return "", fmt.Errorf("must be an issue of Jira project %s: %s-12", b.ProjectKey, b.ProjectKey)
		}
		return m[0], nil
	}
	num := s
	if r, n, ok := strings.Cut(s, "#"); ok {
		if r != "" && !strings.EqualFold(r, b.Repository) {
			return "", fmt.Errorf("names an issue of %s, but this project's tickets live in %s", r, b.Repository)
		}
		num = n
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 {
		return "", fmt.Errorf("must be an issue of %s: owner/name#12, #12 or 12", b.Repository)
	}
	return strconv.FormatInt(n, 10), nil
}

// jiraOptions are the members of a Jira backend that the project's
// columns hold as one JSON document (Columns).
type jiraOptions struct {
	IssueType   string            `json:"issue_type,omitempty"`
	StatusMap   map[string]string `json:"status_map,omitempty"`
	PriorityMap map[string]string `json:"priority_map,omitempty"`
}

// Columns is b as a project row stores it: where (the repository or the
// project key), the API root or site, and a JSON document of the rest
// (empty for GitHub).
func (b Backend) Columns() (where, root, options string) {
	if b.Kind != KindJira {
		return b.Repository, b.APIURL, ""
	}
	raw, _ := json.Marshal(jiraOptions{IssueType: b.IssueType, StatusMap: b.StatusMap, PriorityMap: b.PriorityMap}) // maps of strings: cannot fail
	return b.ProjectKey, b.Site, string(raw)
}

// FromColumns is the backend a project row stores (Columns), of tenant.
func FromColumns(kind, where, root, options, credential, tenant string) Backend {
	b := Backend{Kind: kind, Credential: credential, Tenant: tenant}
	if kind != KindJira {
		b.Repository, b.APIURL = where, root
		return b
	}
	var o jiraOptions
	_ = json.Unmarshal([]byte(options), &o) // written by Columns; a row without one takes the defaults
	b.ProjectKey, b.Site, b.IssueType = where, root, o.IssueType
	b.StatusMap, b.PriorityMap = maps.Clone(o.StatusMap), maps.Clone(o.PriorityMap)
	return b
}
