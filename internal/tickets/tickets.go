// Package tickets is ticketd's domain and its one service layer (Service),
// which MCP, REST and the console all call. Every write (create, update,
// bulk update, comment) runs once per operation ID through the operations
// ledger, its history event and its outbox event in the same transaction,
// behind the approval gate when its policy asks. It imports no transport:
// writes and lists take a Caller (tenant and acting subject), other reads
// the tenant, and a write the operation ID its adapter already parsed
// (operations.ID).
//
// Where things are: service.go the Service; ticket.go one ticket by
// reference (read, or locked for a write); create.go, update.go, bulk.go and
// comments.go the writes, update_write.go an update's statements inside the
// transaction; history.go their events and the outbox hand-off;
// outbox.go the outbox and delivery ports; input.go and store.go the input
// rules and the rows; list.go and page.go the lists; projects.go;
// operations.go what became of an operation; approval.go the gate;
// backend.go the per-project Backend (local, or a tracker's through
// Trackers), mirror.go what a tracker backend writes through, downstream.go
// and operator.go what an operation's tracker shows and an operator does.
package tickets

import (
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/fault"
	"github.com/ticketd/ticketd/internal/tracker"
)

// Caller is who makes a call: the tenant every query is scoped to and the
// subject that acts (a ticket's reporter, an update's actor, a comment's
// author). Both come from a verified token, never from arguments.
type Caller struct {
	Tenant  string
	Subject string
}

// Priority of a ticket.
type Priority string

// The priorities.
const (
	PriorityLow    Priority = "low"
	PriorityNormal Priority = "normal"
	PriorityHigh   Priority = "high"
	PriorityUrgent Priority = "urgent"
)

// Status of a ticket's work (not of an operation).
type Status string

// The ticket statuses.
const (
	StatusOpen       Status = "open"
	StatusInProgress Status = "in_progress"
	StatusResolved   Status = "resolved"
	StatusClosed     Status = "closed"
)

// Statuses lists every ticket status.
var Statuses = []Status{StatusOpen, StatusInProgress, StatusResolved, StatusClosed}

// ErrNotFound: no such ticket or project for this tenant (another tenant's
// are indistinguishable from absent ones).
var ErrNotFound = fault.ErrNotFound

// ErrUnavailable: the ticket store failed before anything was committed.
var ErrUnavailable = fault.ErrUnavailable

// NewTicket is the caller's intent: the meaningful input of create_ticket.
type NewTicket struct {
	ProjectID   string
	Title       string
	Description string
	Priority    Priority
	Labels      []string
	// Parent makes the ticket a sub-task of this one (UUID or key; the
	// service resolves it to the UUID); "" for none.
	Parent string
	// parentKey is the resolved parent's key, for the words a person
	// approving the create reads; it is no part of the input.
	parentKey string
}

// Ticket is a created ticket.
type Ticket struct {
	// Version is 1 at creation and grows by one with every change of the
	// ticket's fields; comments do not change it.
	Version     int64
	Assignee    string // empty when unassigned
	ID          uuid.UUID
	Key         string // project key and number, e.g. SUP-42
	ProjectID   string
	Title       string
	Description string
	Priority    Priority
	Status      Status
	Labels      []string
	Reporter    string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// ExternalID and ExternalURL name the tracker issue a tracker-backed
	// ticket mirrors (e.g. "owner/name#12"); empty for a local ticket.
	ExternalID  string
	ExternalURL string
}

// Project groups tickets; its Key prefixes their keys.
type Project struct {
	ID        string
	Key       string
	Name      string
	CreatedAt time.Time
	// Backend is the tracker the project's tickets live in; nil for a local
	// project, whose tickets live in ticketd's database alone.
	Backend *tracker.Backend
}
