package jira

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// ErrInvalid is wrapped, with tracker.ErrNotSent, by a request ticketd
// refused to send because the project cannot take it (a priority its
// priority_map lacks, an assignee with no account); ErrNoTransition is one.
var ErrInvalid = tracker.ErrInvalid

// Issue is an issue as Jira reports it.
type Issue struct {
	ID          int64
	Key         string // OPS-12
	URL         string // <site>/browse/<KEY>, built by ticketd
	Title       string
	Description string // the text of its ADF document
	Status      string // the Jira status name
	Labels      []string
	Priority    string // the Jira priority name
	AccountID   string // the assignee's account; empty: unassigned
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// NewIssue is what ticketd asks Jira to create for one operation.
type NewIssue struct {
	// Tenant and OperationID name the operation: CreateIssue marks the
	// issue with its labels and appends its marker text to the description.
	Tenant, OperationID string
	Title               string
	Description         string
	Labels              []string // besides ticketd's own
	Priority            string   // a ticketd priority; empty: Jira's default
	AccountID           string   // from Account; empty: unassigned
}

// Describe is description with the operation's marker text as its last
// paragraph: what CreateIssue sends, and what an edit of the description
// sends to keep the marker.
func Describe(description, tenant, operationID string) string {
	m := tracker.Marker(tenant, operationID)
	if description == "" {
		return m
	}
	return description + "\n\n" + m
}

// issueFields are the fields ticketd reads of an issue.
var issueFields = []string{"summary", "description", "status", "labels", "priority", "assignee", "created", "updated"}

type issueJSON struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Fields struct {
		Summary     string          `json:"summary"`
		Description json.RawMessage `json:"description"`
		Status      struct {
			Name string `json:"name"`
		} `json:"status"`
		Labels   []string `json:"labels"`
		Priority *struct {
			Name string `json:"name"`
		} `json:"priority"`
		Assignee *struct {
			AccountID string `json:"accountId"`
		} `json:"assignee"`
		Created jiraTime `json:"created"`
		Updated jiraTime `json:"updated"`
	} `json:"fields"`
}

func (p *Project) toIssue(j issueJSON) Issue {
	id, _ := strconv.ParseInt(j.ID, 10, 64)
	i := Issue{
		ID: id, Key: j.Key, URL: p.browse(j.Key), Title: j.Fields.Summary, Description: DocumentText(j.Fields.Description),
		Status: j.Fields.Status.Name, Labels: j.Fields.Labels, CreatedAt: time.Time(j.Fields.Created), UpdatedAt: time.Time(j.Fields.Updated),
	}
	if j.Fields.Priority != nil {
		i.Priority = j.Fields.Priority.Name
	}
	if j.Fields.Assignee != nil {
		i.AccountID = j.Fields.Assignee.AccountID
	}
	return i
}

var issueKey = regexp.MustCompile(`^(?:[A-Z][A-Z0-9_]*-[1-9][0-9]{0,17}|[1-9][0-9]{0,17})$`)

// issuePath is the API path of issue key (OPS-12, or its numeric ID),
// refused unless key is one: a key ends up in a path, where a tracker's
// answer of ".." would name another resource of the site.
func issuePath(key string) (string, error) {
	if len(key) > 280 || !issueKey.MatchString(key) {
		return "", fmt.Errorf("%w: %w: %q is not a Jira issue key", tracker.ErrNotSent, ErrInvalid, clip(key))
	}
	return "/rest/api/3/issue/" + key, nil
}

// browse is the page of issue key, built from the site: a URL the tracker
// answered could point anywhere.
func (p *Project) browse(key string) string {
	return p.site.String() + "/browse/" + url.PathEscape(key)
}

// jiraTime reads Jira's timestamps (2026-12-02T02:20:37.123+0000) and RFC 3339.
type jiraTime time.Time

func (t *jiraTime) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil || s == "" {
		return nil // a missing or odd time reads as none, not as a failed answer
	}
	for _, layout := range []string{"2006-01-02T15:04:05.000-0700", time.RFC3339Nano} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = jiraTime(v.UTC())
			return nil
		}
	}
	return nil
}

// priority is Jira's name of a ticketd priority, refused when the
// project's priority_map has none.
func (p *Project) priority(ticketPriority string) (map[string]string, error) {
	name, ok := p.cfg.PriorityMap[ticketPriority]
	if !ok {
		return nil, fmt.Errorf("%w: %w: priority %q has no Jira priority (priority_map)", tracker.ErrNotSent, ErrInvalid, ticketPriority)
	}
	return map[string]string{"name": name}, nil
}

// CreateIssue files in as an issue of the project's issue type, labelled
// ticketd and with the operation's label, its marker at the end of the
// description. The Issue returned carries what ticketd sent and the key
// and ID Jira gave it; its status and times are read by GetIssue.
//
// Errors: the classes of tracker.Tracker; ErrInvalid (not sent) for a
// priority the project does not map.
func (p *Project) CreateIssue(ctx context.Context, in NewIssue) (Issue, error) {
	if in.Tenant == "" || in.OperationID == "" {
		return Issue{}, fmt.Errorf("create issue: %w: an issue ticketd files names its operation", tracker.ErrNotSent)
	}
	labels := []string{tracker.Label, OpLabel(in.Tenant, in.OperationID)}
	for _, l := range in.Labels {
		if !slices.Contains(labels, l) {
			labels = append(labels, l)
		}
	}
	desc := Describe(in.Description, in.Tenant, in.OperationID)
	fields := map[string]any{
		"project": map[string]string{"key": p.cfg.ProjectKey}, "issuetype": map[string]string{"name": p.cfg.IssueType},
		"summary": in.Title, "description": Document(desc), "labels": labels,
	}
	var priority string
	if in.Priority != "" {
		pr, err := p.priority(in.Priority)
		if err != nil {
			return Issue{}, fmt.Errorf("create issue: %w", err)
		}
		fields["priority"], priority = pr, pr["name"]
	}
	if in.AccountID != "" {
		fields["assignee"] = map[string]string{"accountId": in.AccountID}
	}
	var got struct {
		ID  string `json:"id"`
		Key string `json:"key"`
	}
	if err := p.call(ctx, "create issue", http.MethodPost, "/rest/api/3/issue", nil, map[string]any{"fields": fields}, &got); err != nil {
		return Issue{}, err
	}
	id, err := strconv.ParseInt(got.ID, 10, 64)
	if _, kerr := issuePath(got.Key); err != nil || kerr != nil {
		return Issue{}, errors.New("create issue: the tracker's answer names no issue")
	}
	return Issue{ID: id, Key: got.Key, URL: p.browse(got.Key), Title: in.Title, Description: desc, Labels: labels,
		Priority: priority, AccountID: in.AccountID}, nil
}

// GetIssue reads issue key (or numeric ID), consistently: a get by key
// does not go through Jira's search index.
func (p *Project) GetIssue(ctx context.Context, key string) (Issue, error) {
	path, err := issuePath(key)
	if err != nil {
		return Issue{}, fmt.Errorf("get issue: %w", err)
	}
	var got issueJSON
	q := url.Values{"fields": {strings.Join(issueFields, ",")}}
	if err := p.call(ctx, "get issue", http.MethodGet, path, q, nil, &got); err != nil {
		return Issue{}, err
	}
	return p.toIssue(got), nil
}

// FindMarked lists the project's issues that carry the operation's label,
// oldest first: more than one is a duplicate the tracker let through.
// Search lags behind creates, so finding none proves nothing until the
// settle window has passed.
func (p *Project) FindMarked(ctx context.Context, tenant, operationID string) ([]Issue, error) {
	return p.FindByLabel(ctx, OpLabel(tenant, operationID))
}

// FindByLabel lists the project's issues with label, oldest first, every
// page, by JQL `project = KEY AND labels = "label"`.
func (p *Project) FindByLabel(ctx context.Context, label string) ([]Issue, error) {
	jql := fmt.Sprintf(`project = %s AND labels = %s ORDER BY created ASC`, p.cfg.ProjectKey, quoteJQL(label))
	req := map[string]any{"jql": jql, "fields": issueFields, "maxResults": pageSize}
	var out []Issue
	for range maxPages {
		var page struct {
			Issues        []issueJSON `json:"issues"`
			NextPageToken string      `json:"nextPageToken"`
			IsLast        bool        `json:"isLast"`
		}
		if err := p.call(ctx, "search issues", http.MethodPost, "/rest/api/3/search/jql", nil, req, &page); err != nil {
			return nil, err
		}
		for _, j := range page.Issues {
			out = append(out, p.toIssue(j))
		}
		if page.IsLast || page.NextPageToken == "" {
			return out, nil
		}
		req["nextPageToken"] = page.NextPageToken
	}
	return nil, fmt.Errorf("search issues: %w", trackerhttp.ErrTooManyPages)
}

// quoteJQL is s as a JQL string literal.
func quoteJQL(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// IssueEdit sets fields of an issue; nil fields are left alone.
type IssueEdit struct {
	Title       *string
	Description *string // the whole text: keep the marker (Describe)
	Priority    *string // a ticketd priority
	AccountID   *string // empty: unassign
	AddLabels   []string
	DelLabels   []string
}

// EditIssue applies edit with one PUT, which Jira answers with no
// document; setting fields is naturally idempotent, so a retry of an
// unknown outcome may send it again. Labels are added and removed, never
// replaced, so a person's labels and the markers stay.
//
// Errors: the classes of tracker.Tracker; ErrInvalid (not sent) for a
// priority the project does not map.
func (p *Project) EditIssue(ctx context.Context, key string, edit IssueEdit) error {
	path, err := issuePath(key)
	if err != nil {
		return fmt.Errorf("edit issue: %w", err)
	}
	fields := map[string]any{}
	if edit.Title != nil {
		fields["summary"] = *edit.Title
	}
	if edit.Description != nil {
		fields["description"] = Document(*edit.Description)
	}
	if edit.Priority != nil {
		pr, err := p.priority(*edit.Priority)
		if err != nil {
			return fmt.Errorf("edit issue: %w", err)
		}
		fields["priority"] = pr
	}
	if edit.AccountID != nil {
		fields["assignee"] = map[string]string{"accountId": *edit.AccountID}
		if *edit.AccountID == "" {
			fields["assignee"] = nil
		}
	}
	var ops []map[string]string
	for _, l := range edit.AddLabels {
		ops = append(ops, map[string]string{"add": l})
	}
	for _, l := range edit.DelLabels {
		ops = append(ops, map[string]string{"remove": l})
	}
	body := map[string]any{"fields": fields}
	if len(ops) > 0 {
		body["update"] = map[string]any{"labels": ops}
	}
	return p.call(ctx, "edit issue", http.MethodPut, path, nil, body, nil)
}
