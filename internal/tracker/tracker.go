// Package tracker is the port through which ticketd acts on an external
// issue tracker that has no idempotency key (docs/contract.md#tracker-backed-projects). It holds only the
// shapes and the classification of answers the reconciliation logic in
// internal/tickets decides with; adapters (internal/tracker/github) speak
// the tracker's API.
package tracker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// KindGitHub is the one backend kind so far: GitHub Issues (REST API v3).
const KindGitHub = "github"

// GitHubAPI is the API root a GitHub backend without an api_url reaches.
const GitHubAPI = "https://api.github.com/"

// Label marks every issue ticketd creates, so reconciliation can list them
// through the tracker's consistent list endpoint.
const Label = "ticketd"

// Backend says where a tracker-backed project's tickets live. The token is
// never held here: Credential names one the operator declared
// (TICKETD_TRACKER_CREDENTIALS), read each time the tracker is used.
type Backend struct {
	Kind       string // KindGitHub
	Repository string // owner/name
	APIURL     string // empty: the public API
	Credential string // the name of a declared credential
	// Tenant is the project's tenant, set by the store (never by a caller):
	// the credential must be one the tenant may use.
	Tenant string
}

// Issue is an issue as the tracker reports it.
type Issue struct {
	Number    int64
	URL       string // the page a person opens
	Title     string
	Body      string
	State     string // open or closed
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time // any change: an edit, a comment, a label
}

// NewIssue is what ticketd asks the tracker to create.
type NewIssue struct {
	Title  string
	Body   string
	Labels []string
}

// Comment is a comment on an issue.
type Comment struct {
	ID        int64
	Issue     int64 // the number of the issue it is on
	URL       string
	Body      string
	CreatedAt time.Time
}

// Tracker is one repository of one tracker, reached with one token.
//
// Errors are classified for the caller that must decide whether something
// may have happened: ErrNotSent (the request never left, so nothing
// happened; a *HostDownError is one), *RateLimitError (refused before acting, retry after the wait),
// ErrRejected (a definite 4xx answer: nothing was created). Any other error
// means the request may have been acted on.
type Tracker interface {
	CreateIssue(ctx context.Context, in NewIssue) (Issue, error)
	GetIssue(ctx context.Context, number int64) (Issue, error)
	// ListLabelled lists the issues with label updated at or after since,
	// open and closed, every page: the list endpoint, which (unlike search)
	// shows an issue as soon as its creation has been acknowledged.
	ListLabelled(ctx context.Context, label string, since time.Time) ([]Issue, error)
	// EditIssue sets the given fields (nil leaves a field as it is).
	EditIssue(ctx context.Context, number int64, edit IssueEdit) (Issue, error)
	CreateComment(ctx context.Context, number int64, body string) (Comment, error)
	// ListComments lists the issue's comments updated at or after since,
	// every page, oldest first.
	ListComments(ctx context.Context, number int64, since time.Time) ([]Comment, error)
	// GetComment reads one comment by its ID (consistent, unlike the list).
	GetComment(ctx context.Context, commentID int64) (Comment, error)
	DeleteComment(ctx context.Context, commentID int64) error
}

// IssueEdit sets fields of an issue; nil fields are left alone.
type IssueEdit struct {
	Title  *string
	Body   *string
	State  *string // open or closed
	Labels *[]string
}

// Opener opens the tracker of a backend, reading its token at that moment.
type Opener func(b Backend) (Tracker, error)

// The answer classes a Tracker's errors wrap.
var (
	// ErrNotSent: the request was never written to the network (refused
	// locally, no connection), so the tracker did nothing.
	ErrNotSent = errors.New("tracker request not sent")
	// ErrRejected: the tracker answered with a definite refusal (a 4xx other
	// than a rate limit): nothing was created or changed.
	ErrRejected = errors.New("tracker rejected the request")
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
