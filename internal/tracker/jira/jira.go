// Package jira is the Jira adapter of internal/tracker: Jira Cloud REST v3
// (and Data Center where its shapes match), for exactly the calls DESIGN
// §22 lets ticketd make: create, get and edit an issue, search by JQL,
// list, add and delete comments, list and take transitions, search users.
// No maintained Jira client for Go is on the module list this project
// draws from, and those calls are few, so the client is this package's
// own, over the boundary the GitHub adapter crosses too
// (internal/tracker/trackerhttp: the SSRF guard at every dial, no
// redirects, bounded answers and pages, the credential sent to the
// project's site only, the per-host cap and breaker); this package reads
// Jira's answers, each classified for the caller that has to decide
// whether something may have been done (tracker.ErrNotSent,
// *tracker.RateLimitError, tracker.ErrRejected, tracker.ErrMisconfigured;
// any other error may have acted).
//
// Project speaks Jira's own shapes (an issue named by its key and carrying
// its numeric ID, edits by labels added and removed, a status by
// transition); PortOpener wraps it as tracker.Tracker for internal/tracked
// (port.go). How the port fits Jira:
//
//   - FindMarked is the JQL search of the operation's label: Jira has no
//     consistent list endpoint and its index lags, so a miss proves nothing
//     until the settle window has passed and the index has shown ticketd's
//     previous write (internal/tracked).
//   - EditIssue takes the workflow's transition to the status first (none
//     available is a *NoTransitionError, tracker.ErrInvalid, sent nothing),
//     then one PUT, then reads the issue back: PUT answers no document.
//   - CloseDuplicate comments, labels ticketd-duplicate and transitions to
//     the closed status.
//   - GetComment lists the issue's comments (§22 has no get of one), which
//     Jira reads consistently.
//   - Issue labels seen through the port leave out the marker labels.
//   - A priority goes by its priority_map name; one the map lacks is
//     tracker.ErrInvalid before anything is sent. An assignee is an
//     account ID, which Account finds by user search for an email address
//     (internal/tracked asks with the assignee's email from the tenant's
//     directory before it claims the edit).
package jira

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/ticketd/ticketd/internal/tracker"
)

// Kind is the backend kind of a Jira project.
const Kind = "jira"

// Labels ticketd sets: the operation label is OpLabelPrefix and the first
// 16 hex digits of sha256("tenant/operation_id"); a duplicate it closed
// carries DuplicateLabel.
const (
	OpLabelPrefix  = "ticketd-op-"
	DuplicateLabel = "ticketd-duplicate"
)

// OpLabel is the label that marks the issue of one operation: short and
// free of the characters Jira refuses in a label (spaces) or JQL would
// need escaped, whatever the tenant and operation ID hold.
func OpLabel(tenant, operationID string) string {
	sum := sha256.Sum256([]byte(tenant + "/" + operationID))
	return OpLabelPrefix + hex.EncodeToString(sum[:])[:16]
}

// The ticketd statuses and priorities a backend maps, and the defaults of
// §22 for a backend that names none.
var (
	Statuses   = []string{"open", "in_progress", "resolved", "closed"}
	Priorities = []string{"low", "normal", "high", "urgent"}

	DefaultIssueType   = tracker.DefaultJiraIssueType
	DefaultStatusMap   = tracker.DefaultJiraStatusMap
	DefaultPriorityMap = tracker.DefaultJiraPriorityMap
)

// Config is a Jira project's backend as a tenant admin gives it:
//
//	{"kind": "jira", "site": "https://acme.atlassian.net", "project_key": "OPS",
//	 "issue_type": "Task", "credential": "NAME", "status_map": {…}, "priority_map": {…}}
type Config struct {
	Site        string            `json:"site"`
	ProjectKey  string            `json:"project_key"`
	IssueType   string            `json:"issue_type,omitempty"`
	Credential  string            `json:"credential"`
	StatusMap   map[string]string `json:"status_map,omitempty"`
	PriorityMap map[string]string `json:"priority_map,omitempty"`
	// Tenant is the project's tenant, set by the store (never by a
	// caller): the credential must be one the tenant may use.
	Tenant string `json:"-"`
}

var projectKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,254}$`)

// WithDefaults returns c with §22's defaults where it names nothing: the
// issue type, and each status and priority its maps leave out.
func (c Config) WithDefaults() Config {
	if c.IssueType == "" {
		c.IssueType = DefaultIssueType
	}
	c.StatusMap = merged(DefaultStatusMap, c.StatusMap)
	c.PriorityMap = merged(DefaultPriorityMap, c.PriorityMap)
	c.Site = strings.TrimSuffix(c.Site, "/")
	return c
}

func merged(defaults, given map[string]string) map[string]string {
	out := maps.Clone(defaults)
	maps.Copy(out, given)
	return out
}

// Check refuses a backend that cannot be used as given, saying which
// member: a site that is not an https URL with a host alone (the guard
// judges the host), a project key that is not a Jira key, a map naming a
// status or priority ticketd does not have, or mapping one to nothing.
func (c Config) Check() error {
	u, err := url.Parse(c.Site)
	switch {
	case err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "":
		return fmt.Errorf("site: want the site's root, https://NAME.atlassian.net")
	case !projectKey.MatchString(c.ProjectKey):
		return fmt.Errorf("project_key: %q is not a Jira project key (capital letters, digits, '_')", c.ProjectKey)
	case strings.TrimSpace(c.IssueType) == "" && c.IssueType != "":
		return fmt.Errorf("issue_type: empty")
	}
	for member, m := range map[string]struct {
		given map[string]string
		known []string
	}{"status_map": {c.StatusMap, Statuses}, "priority_map": {c.PriorityMap, Priorities}} {
		for k, v := range m.given {
			if !slices.Contains(m.known, k) {
				return fmt.Errorf("%s: %q is not one of %s", member, k, strings.Join(m.known, ", "))
			}
			if strings.TrimSpace(v) == "" {
				return fmt.Errorf("%s: %s maps to no Jira name", member, k)
			}
		}
	}
	return nil
}

// TicketStatus is the ticketd status of the Jira status name, the first in
// Statuses' order that maps to it (resolved before closed, which share
// Done by default); false when none does.
func (c Config) TicketStatus(jiraStatus string) (string, bool) {
	for _, s := range Statuses {
		if strings.EqualFold(c.StatusMap[s], jiraStatus) {
			return s, true
		}
	}
	return "", false
}
