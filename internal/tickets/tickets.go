// Package tickets is ticketd's domain and its one service layer (Service):
// projects; the writes (create, update, comment), each run once per
// operation ID through the operations ledger, with its history event and
// its outbox entry in the same transaction; reads, search and history; and
// what became of an operation. It imports no transport: the tenant and the
// acting subject are explicit arguments of every method.
package tickets

import (
	"errors"
	"time"

	"github.com/google/uuid"

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
var ErrNotFound = errors.New("not found")

// ErrUnavailable: the ticket store failed before anything was committed.
var ErrUnavailable = errors.New("ticket store unavailable")

// NewTicket is the caller's intent: the meaningful input of create_ticket.
type NewTicket struct {
	ProjectID   string
	Title       string
	Description string
	Priority    Priority
	Labels      []string
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
