// Package tracker is the port through which ticketd acts on an external
// issue tracker that has no idempotency key (docs/contract.md#tracker-backed-projects). It holds only the
// shapes and the classification of answers the reconciliation logic in
// internal/tracked decides with; adapters (internal/tracker/github,
// internal/tracker/jira) speak the tracker's API.
package tracker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// The backend kinds: GitHub Issues (REST API v3) and Jira (Cloud REST v3).
const (
	KindGitHub = "github"
	KindJira   = "jira"
)

// GitHubAPI is the API root a GitHub backend without an api_url reaches.
const GitHubAPI = "https://api.github.com/"

// Label marks every issue ticketd creates, so reconciliation can list them
// through the tracker's consistent list endpoint.
const Label = "ticketd"

// Backend says where a tracker-backed project's tickets live. The token is
// never held here: Credential names one the operator declared
// (TICKETD_TRACKER_CREDENTIALS), read each time the tracker is used.
type Backend struct {
	Kind       string // KindGitHub or KindJira
	Repository string // GitHub: owner/name
	APIURL     string // GitHub: empty for the public API
	Credential string // the name of a declared credential
	// Jira (DESIGN §22): the site's root, the project key, and the issue
	// type and status and priority names, empty for the defaults
	// (JiraDefaults).
	Site        string
	ProjectKey  string
	IssueType   string
	StatusMap   map[string]string
	PriorityMap map[string]string
	// Tenant is the project's tenant, set by the store (never by a caller):
	// the credential must be one the tenant may use.
	Tenant string
}

// StatusName is the tracker's name for a ticket status (open,
// in_progress, resolved, closed): what an issue's State shows once it has
// the status. GitHub has only open and closed; Jira maps each status
// through the backend's status_map.
func (b Backend) StatusName(status string) string {
	if b.Kind == KindJira {
		if name, ok := b.StatusMap[status]; ok {
			return name
		}
		return DefaultJiraStatusMap[status]
	}
	if status == "resolved" || status == "closed" {
		return "closed"
	}
	return "open"
}

// Issue is an issue as the tracker reports it. Labels are the ticket's:
// the marker labels a tracker searches by are not among them.
type Issue struct {
	// Ref is how the tracker addresses the issue: GitHub's number ("12"),
	// Jira's key ("OPS-12").
	Ref    string
	URL    string // the page a person opens
	Title  string
	Body   string
	State  string // the tracker's own status name (Backend.StatusName): GitHub's open or closed
	Labels []string
	// Priority is the tracker's own priority name (Backend.PriorityName)
	// and Assignee the account the issue is assigned to (Tracker.Account),
	// where the tracker's issues hold them (Backend.HoldsPriorityAndAssignee);
	// empty otherwise, and Assignee when unassigned.
	Priority  string
	Assignee  string
	CreatedAt time.Time
	UpdatedAt time.Time // any change: an edit, a comment, a label
}

// NewIssue is what ticketd asks the tracker to create.
type NewIssue struct {
	Title  string
	Body   string // ends with Mark's Text
	Labels []string
	// Priority is a ticket priority (low, normal, high, urgent), sent as
	// Backend.PriorityName of it; empty sends none. Only for a tracker
	// whose issues hold one (Backend.HoldsPriorityAndAssignee).
	Priority string
	// Mark is the operation that creates it, for a tracker that finds an
	// operation's issues by a label (Mark.Label) rather than by their text.
	Mark Mark
}

// Mark identifies what one operation made in a tracker.
type Mark struct {
	Tenant      string
	OperationID string
}

// Text is the marker an issue of the operation carries in its body (Marker).
func (m Mark) Text() string { return Marker(m.Tenant, m.OperationID) }

// Label is the label an issue of the operation carries where the tracker
// searches by label: ticketd-op- and the first 16 hex digits of
// sha256("tenant/operation_id").
func (m Mark) Label() string {
	sum := sha256.Sum256([]byte(m.Tenant + "/" + m.OperationID))
	return "ticketd-op-" + hex.EncodeToString(sum[:8])
}

// Comment is a comment on an issue.
type Comment struct {
	ID        string // the tracker's ID of the comment
	Issue     string // the Ref of the issue it is on
	URL       string
	Body      string
	CreatedAt time.Time
}

// Tracker is one repository (GitHub) or project (Jira) of one tracker,
// reached with one credential. Issues are named by their Ref, comments by
// their issue's Ref and their ID.
//
// Errors are classified for the caller that must decide whether something
// may have happened: ErrNotSent (the request never left, so nothing
// happened; a *HostDownError is one), *RateLimitError (refused before acting, retry after the wait),
// ErrRejected (a definite 4xx answer: nothing was created). Any other error
// means the request may have been acted on.
type Tracker interface {
	CreateIssue(ctx context.Context, in NewIssue) (Issue, error)
	GetIssue(ctx context.Context, ref string) (Issue, error)
	// FindMarked returns the issues m marks, open and closed, changed at or
	// after since, every page, in no set order. GitHub lists the issues
	// labelled Label and reads their bodies for m's Text: the list endpoint,
	// which (unlike search) shows an issue as soon as its creation has been
	// acknowledged. A tracker that can only search (Jira, by m's Label) lags
	// behind its creates: the settle window is what covers that.
	FindMarked(ctx context.Context, m Mark, since time.Time) ([]Issue, error)
	// EditIssue sets the given fields (nil leaves a field as it is); a
	// Status moves the issue to the tracker's name for it.
	EditIssue(ctx context.Context, ref string, edit IssueEdit) (Issue, error)
	CreateComment(ctx context.Context, ref, body string) (Comment, error)
	// ListComments lists the issue's comments updated at or after since,
	// every page, oldest first.
	ListComments(ctx context.Context, ref string, since time.Time) ([]Comment, error)
	// GetComment reads one comment of the issue by its ID (consistent,
	// unlike the list).
	GetComment(ctx context.Context, ref, commentID string) (Comment, error)
	DeleteComment(ctx context.Context, ref, commentID string) error
	// CloseDuplicate closes dup, a second issue the tracker let through
	// for m, as a duplicate of keep, saying so on it in the tracker's own
	// way (GitHub: a comment and the closed state; Jira: a comment, the
	// ticketd-duplicate label and the transition to the closed status).
	// Every step is idempotent, so a retry may run it again.
	CloseDuplicate(ctx context.Context, m Mark, keep, dup Issue) error
	// Account is the tracker's account of the person with this email
	// address, for an IssueEdit's Assignee: exactly one active account, or
	// ErrInvalid (with ErrNotSent), since ticketd never guesses whom to
	// assign. A tracker whose issues hold no assignee answers ErrInvalid.
	Account(ctx context.Context, email string) (string, error)
}

// DuplicateNote is the text ticketd leaves on a duplicate it closes.
func DuplicateNote(m Mark, keepRef string) string {
	return fmt.Sprintf("Duplicate of %s. ticketd filed this issue twice for one operation (%s/%s): a request went unanswered "+
		"or the tracker acted on it twice, and the tracker has no idempotency key, so it could not be deduplicated. "+
		"Keeping %s, the older; closing this one.", keepRef, m.Tenant, m.OperationID, keepRef)
}

// IssueEdit sets fields of an issue; nil fields are left alone.
type IssueEdit struct {
	Title *string
	Body  *string
	// Status is a ticket status (open, in_progress, resolved, closed): the
	// adapter moves the issue to Backend.StatusName of it (GitHub sets its
	// state; a workflow tracker takes the transition to it). Stored edits
	// name it State, as when it held GitHub's open or closed, which read as
	// the ticket statuses of the same names.
	Status *string `json:"State"`
	Labels *[]string
	// Priority is a ticket priority, set as Backend.PriorityName of it;
	// Assignee an account (Account), "" unassigning. Only for a tracker
	// whose issues hold them (Backend.HoldsPriorityAndAssignee): another
	// refuses either with ErrInvalid, sending nothing.
	Priority *string
	Assignee *string
}

// Opener opens the tracker of a backend, reading its token at that moment.
type Opener func(b Backend) (Tracker, error)

// ByKind is the Opener that opens each backend with the opener of its
// kind; a kind with none is ErrMisconfigured.
func ByKind(openers map[string]Opener) Opener {
	return func(b Backend) (Tracker, error) {
		open, ok := openers[b.Kind]
		if !ok {
			return nil, fmt.Errorf("%w: this server reaches no tracker of kind %q", ErrMisconfigured, b.Kind)
		}
		return open(b)
	}
}

// The answer classes a Tracker's errors wrap.
var (
	// ErrNotSent: the request was never written to the network (refused
	// locally, no connection), so the tracker did nothing.
	ErrNotSent = errors.New("tracker request not sent")
	// ErrRejected: the tracker answered with a definite refusal (a 4xx other
	// than a rate limit): nothing was created or changed.
	ErrRejected = errors.New("tracker rejected the request")
	// ErrInvalid: the tracker cannot take the request as asked (a status
	// its workflow has no transition to, a priority with no name in it, an
	// assignee with no account, a field its issues do not hold), and it
	// was not sent; the error's text says what it can take. It is
	// wrapped together with ErrNotSent.
	ErrInvalid = errors.New("the tracker cannot take this")
	// ErrMisconfigured: the backend cannot be used as configured (no
	// credential the tenant may use, no token in its variable, a bad or
	// refused API URL); nothing was sent.
	ErrMisconfigured = errors.New("tracker backend misconfigured")
)

// RateLimitError: the tracker refused the request for a (secondary) rate
// limit; it did not act on it, and asks to wait RetryAfter.
type RateLimitError struct {
	RetryAfter time.Duration
	Message    string
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("tracker rate limit: %s (retry after %s)", e.Message, e.RetryAfter)
}

// HostDownError: the tracker's host has left requests unanswered (timed
// out, failed to connect, answered 5xx) so many times in a row that its
// breaker is open, and this request was not sent: it wraps ErrNotSent.
// One may be sent after RetryAfter.
type HostDownError struct {
	Host       string
	RetryAfter time.Duration
}

func (e *HostDownError) Error() string {
	return fmt.Sprintf("%s: the tracker host %s has not been answering; the next request may go in %s",
		ErrNotSent, e.Host, e.RetryAfter.Round(time.Second))
}

func (e *HostDownError) Unwrap() error { return ErrNotSent }

// Marker is the text ticketd puts in every issue it creates for an
// operation, so reconciliation can tell whether an earlier attempt landed.
func Marker(tenant, operationID string) string {
	return fmt.Sprintf("<!-- ticketd:operation=%s/%s -->", tenant, operationID)
}

// ActionMarker is Marker for an action other than a create (a comment):
// it names the action too, so one operation ID used for a create and for
// a comment can never be mistaken for the other.
func ActionMarker(tenant, action, operationID string) string {
	return fmt.Sprintf("<!-- ticketd:operation=%s/%s action=%s -->", tenant, operationID, action)
}
