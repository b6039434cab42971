package tickets

import (
	"errors"
	"time"
)

// Downstream statuses (docs/contract.md#tracker-backed-projects).
const (
	DownstreamPending   = "pending"
	DownstreamSucceeded = "succeeded"
	DownstreamUnknown   = "unknown"
	DownstreamFailed    = "failed"
)

// Downstream is what get_operation_status shows of an operation's effect
// in a tracker.
type Downstream struct {
	System      string
	Status      string // DownstreamPending, …Succeeded, …Unknown or …Failed
	ExternalID  string
	ExternalURL string
	Attempts    int // requests that may have reached the tracker
	LastError   string
	NextCheckAt *time.Time
	Duplicates  []Duplicate
}

// Duplicate is a second issue filed for one operation, found after the fact.
type Duplicate struct {
	ExternalID  string `json:"external_id"`
	ExternalURL string `json:"external_url"`
	Closed      bool   `json:"closed"`
	KeptID      string `json:"kept_external_id"`
}

// HistoryEntry is one step in an operation's reconciliation: who did what,
// when, and why.
type HistoryEntry struct {
	Kind   string
	Actor  string
	Detail string
	At     time.Time
}

// ErrSettled: the operation was already settled (by another worker or an
// operator), so the finding was not recorded.
var ErrSettled = errors.New("operation already settled")
