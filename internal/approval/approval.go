// Package approval is ticketd's gate for consequential writes (docs/contract.md#approval):
// the policy that says which writes need a person's yes, the approvals a
// person gives or refuses, and the signed request state that carries an
// elicitation across a stateless retry. It sits between the ledger's fast
// path and its claim (operations.Ledger.RunFolded and RunGated), so a replay never asks
// again, and an approval is consumed in the write's own transaction.
//
// Nothing a caller sends as tool arguments can approve: only a person's
// answer to an elicitation this package asked for (bound by an HMAC to the
// tenant, subject, action, operation ID and fingerprint), or a decision on
// the console page or over REST by a subject the transport let decide (it
// holds tickets:approve in the tenant; with Options.FourEyes it is not the
// requester) does. Every path honours Options.TTL (docs/approval.md).
//
// The package knows no transport: it tells its caller how the person can be
// asked (Mode) and the caller, MCP or REST, phrases the question.
package approval

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/operations"
)

// Status is where an approval stands.
type Status string

// The statuses.
const (
	StatusPending  Status = "pending"
	StatusApproved Status = "approved"
	StatusDeclined Status = "declined"
	StatusUsed     Status = "used"
	StatusExpired  Status = "expired"
)

// Via is how a person decided.
type Via string

// The ways a person decides.
const (
	// ViaForm: an elicitation form in the agent's client.
	ViaForm Via = "form"
	// ViaURL: the console page an URL elicitation opened.
	ViaURL Via = "url"
	// ViaConsole: the console page, opened from an approval_required error
	// or the console's list of pending approvals.
	ViaConsole Via = "console"
	// ViaREST: POST /api/v1/approvals/{id}/approve or /decline.
	ViaREST Via = "rest"
)

// Mode is how the person behind a request can be asked.
type Mode string

// The modes, best first.
const (
	// ModeForm: the client renders an elicitation form in this request.
	ModeForm Mode = "form"
	// ModeURL: the client opens a URL (the console page) for the person.
	ModeURL Mode = "url"
	// ModeNone: the client can do neither; the caller is told to have the
	// person open the URL, then retry (approval_required).
	ModeNone Mode = "none"
)

// Events counted by Options.OnEvent.
const (
	EventAsked    = "asked"
	EventApproved = "approved"
	EventDeclined = "declined"
	EventExpired  = "expired"
)

// Events lists the counted events, for metrics that show every one from
// the start.
func Events() []string { return []string{EventAsked, EventApproved, EventDeclined, EventExpired} }

var (
	// ErrRequired: the write needs a person's yes that it does not have yet;
	// nothing was written or recorded. *RequiredError says how to ask.
	ErrRequired = errors.New("approval required")
	// ErrDeclined: the person said no; nothing was written or recorded.
	ErrDeclined = errors.New("approval declined")
	// ErrBadState: the request state is not one this server issued for
	// this tenant, subject and write, or was answered already.
	ErrBadState = errors.New("invalid request state")
	// ErrNotFound: no such approval in this tenant.
	ErrNotFound = errors.New("no such approval")
	// ErrDecided: the approval was decided already (or expired).
	ErrDecided = errors.New("approval already decided")
	// ErrSelfApproval: with four-eyes on, the requester's own subject tried
	// to decide its approval; another person must.
	ErrSelfApproval = errors.New("four-eyes approval: the requester cannot decide its own write")
	// ErrUnavailable: the store failed; nothing was decided.
	ErrUnavailable = errors.New("approval store unavailable")
)

// RequiredError is ErrRequired with what the caller needs to ask.
type RequiredError struct {
	Approval Approval
	Mode     Mode
	// State is the signed request state to send with a form or URL
	// elicitation; empty for ModeNone.
	State string
	// URL is the console page where the person decides.
	URL string
}

func (e *RequiredError) Error() string {
	return fmt.Sprintf("approval required: %s (approval %s, expires %s)", e.Approval.Proposal.Summary,
		e.Approval.ID, e.Approval.ExpiresAt.Format(time.RFC3339))
}

// Is makes errors.Is(err, ErrRequired) true.
func (e *RequiredError) Is(target error) bool { return target == ErrRequired }

// Policy says which writes need approval.
type Policy struct {
	// Enabled switches approval on (TICKETD_APPROVAL=on, the default).
	Enabled bool
	// BulkThreshold is the number of tickets from which a bulk update
	// needs approval (TICKETD_APPROVAL_BULK_THRESHOLD, default 10).
	BulkThreshold int
}

// DefaultBulkThreshold is Policy.BulkThreshold's default.
const DefaultBulkThreshold = 10

// Needs reports whether a write that would do p needs a person's yes: it
// makes a ticket urgent (urgent pages on-call), or it is a bulk update that
// changes at least BulkThreshold tickets. A ticket the write would leave as
// it is counts for nothing: nobody is asked about a change that is none.
func (p Policy) Needs(pr Proposal) bool {
	if !p.Enabled {
		return false
	}
	threshold := p.BulkThreshold
	if threshold <= 0 {
		threshold = DefaultBulkThreshold
	}
	if pr.Urgent {
		return true
	}
	changing := 0
	for _, it := range pr.Items {
		if len(it.Changes) > 0 {
			changing++
		}
	}
	return pr.Bulk && changing >= threshold
}

// Proposal is what a write would do, as the policy judges it and the person
// is shown it: exactly what will change, ticket by ticket.
type Proposal struct {
	// Summary names the action, the tickets and the operation ID in one
	// sentence; the elicitation's message.
	Summary string `json:"summary"`
	Items   []Item `json:"items"`
	// Urgent: the write makes a ticket urgent (not one already urgent).
	// Bulk: one write, many tickets.
	Urgent bool `json:"urgent"`
	Bulk   bool `json:"bulk"`
}

// Item is one ticket's part of a proposal.
type Item struct {
	Ticket  string        `json:"ticket"` // the key, or "new ticket in <project>"
	Changes []FieldChange `json:"changes"`
}

// FieldChange is one field's move, as text a person reads.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Approval is one time a person was asked about one intended write.
type Approval struct {
	ID          string
	Tenant      string
	Action      string
	OperationID uuid.UUID
	Fingerprint string
	RequestedBy string
	Proposal    Proposal
	Status      Status
	DecidedBy   string
	DecidedVia  Via
	CreatedAt   time.Time
	DecidedAt   *time.Time
	ExpiresAt   time.Time
}

// Target names the write a gate decides on: the ledger's key and
// fingerprint, and the subject of the requesting token.
type Target struct {
	Key         operations.Key
	Fingerprint string
	Subject     string
}

// Answer is the person's answer to an elicitation, as the client sent it.
type Answer struct {
	// Action is accept, decline or cancel.
	Action string
	// Approve is the form's approve field (false when absent).
	Approve bool
}

// Channel is what one request allows for asking, and what it brought back
// from an earlier ask. The transport fills it from the protocol (never
// from tool arguments) and passes it in the context (WithChannel).
type Channel struct {
	// Form and URL: the modes the client declared for this request.
	Form, URL bool
	// State is the requestState the client echoed; Answer the person's
	// answer to the input request it went with (nil when none came).
	State  string
	Answer *Answer
}

type channelKey struct{}

// WithChannel returns ctx carrying what the request allows for asking, as
// a function the gate calls only when a proposal needs approval: working
// it out can cost more than the calls that never ask (most of them).
func WithChannel(ctx context.Context, ch func() Channel) context.Context {
	return context.WithValue(ctx, channelKey{}, ch)
}

func channelFrom(ctx context.Context) Channel {
	if ch, ok := ctx.Value(channelKey{}).(func() Channel); ok {
		return ch()
	}
	return Channel{}
}
