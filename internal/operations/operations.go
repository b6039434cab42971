// Package operations is ticketd's idempotency ledger: it runs a caller's
// write at most once per (tenant, action, operation ID), in the same
// database transaction as the record that remembers its outcome.
//
// The package is generic: it knows keys, fingerprints, statuses and result
// IDs, never what the write creates.
package operations

import (
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// Status is where an operation stands. It is part of the public contract.
type Status string

// The statuses a record can have.
const (
	// StatusPending means the key is claimed and the outcome is not known
	// yet. Run never stores it: its record is written complete (succeeded)
	// and is invisible until COMMIT, so it only reports it for a key a
	// concurrent call holds (ErrInProgress). Claim stores it before a side
	// effect outside the database (a tracker request), and Settle moves it on.
	StatusPending Status = "pending"
	// StatusSucceeded means the write committed; ResultID names what it made.
	StatusSucceeded Status = "succeeded"
	// StatusFailed means a definitive, recorded rejection.
	StatusFailed Status = "failed"
	// StatusUnknown means the outcome needs reconciliation.
	StatusUnknown Status = "unknown"
	// StatusExpired means the write ran and its record was pruned (Prune):
	// only its tombstone is left, which keeps the key and the fingerprint
	// but not the result. No record is stored with it; lookups report it,
	// and a retry gets ErrExpired.
	StatusExpired Status = "expired"
)

// Errors the ledger returns. Each maps to one contract code (docs/contract.md#error-codes).
var (
	// ErrConflict: the key was used before with a different fingerprint.
	ErrConflict = errors.New("operation ID already used with different input")
	// ErrInProgress: another call holds the key and has not finished.
	ErrInProgress = errors.New("operation with this ID is in progress")
	// ErrOutcomeUnknown: COMMIT was sent but its answer was lost; the write
	// may or may not have landed.
	ErrOutcomeUnknown = errors.New("outcome unknown: the commit's reply was lost")
	// ErrFailed: the key's operation was recorded as failed; repeating it
	// cannot succeed.
	ErrFailed = errors.New("operation failed earlier")
	// ErrExpired: the key was applied once already, but its record is
	// gone: pruned past the retention window (DefaultRetention), so its
	// result can no longer be replayed. The key's tombstone says so (a
	// record pruned before tombstones existed: the write's own row, a
	// ticket, comment or event, does). The write is refused rather than
	// applied a second time.
	ErrExpired = errors.New("operation ID already applied; its record is past the retention window")
	// ErrNotFound: no record exists for the key within this tenant.
	ErrNotFound = errors.New("no operation with this ID")
	// ErrUnavailable: the store failed before anything was committed.
	ErrUnavailable = errors.New("store unavailable")
)

// Key identifies one intended action of one tenant.
type Key struct {
	Tenant      string
	Action      string
	OperationID uuid.UUID
}

func (k Key) String() string {
	return fmt.Sprintf("%s/%s/%s", k.Tenant, k.Action, k.OperationID)
}

// Record is what the ledger remembers about a key.
type Record struct {
	Key
	Fingerprint string
	Status      Status
	ResultID    string // set when Status is succeeded
	Error       string // set when Status is failed
	// ApprovalID names the person's approval the write needed (docs/contract.md#approval);
	// empty when it needed none.
	ApprovalID string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Outcome is the answer to Run: the record and whether it was replayed from
// an earlier call rather than produced by this one.
type Outcome struct {
	Record   Record
	Replayed bool
	// ResultRead says a replay's result row was read into Replay.Into
	// (RunReplaying).
	ResultRead bool
}

// IDError says why a text is not an operation ID. Reason reads after the
// name of whatever carried the ID ("must be a UUID of version 4 or 7, got
// version 1"), so that each caller names its own field: the operation_id
// argument, the Idempotency-Key header, a form's key.
type IDError struct {
	Reason string
}

func (e *IDError) Error() string { return "operation ID " + e.Reason }

// ID is an operation ID that ParseID accepted (only ParseID makes one).
// Adapters parse the caller's text once, naming their own field in the
// error, and every write takes the ID in this form, so nothing parses it
// again. The zero ID is none.
type ID struct{ u uuid.UUID }

// UUID returns the ID as the ledger keys it.
func (id ID) UUID() uuid.UUID { return id.u }

// String returns the ID's stored form: lower-case 8-4-4-4-12.
func (id ID) String() string { return id.u.String() }

// IsZero reports whether id is the zero ID, which no caller can send.
func (id ID) IsZero() bool { return id.u == uuid.Nil }

// ParseID parses an operation ID: a canonical 8-4-4-4-12 UUID of version 4
// or 7 (either case). Braces, "urn:uuid:", other versions and the nil UUID
// are rejected because a predictable or ambiguous key would let two
// intentions collide.
//
// Errors: *IDError.
func ParseID(s string) (ID, error) {
	if len(s) != 36 {
		return ID{}, &IDError{fmt.Sprintf("must be a UUID in 8-4-4-4-12 form (36 characters), got %d characters", len(s))}
	}
	id, err := uuid.Parse(s)
	if err != nil {
		return ID{}, &IDError{"is not a UUID: " + err.Error()}
	}
	if id.Variant() != uuid.RFC4122 {
		return ID{}, &IDError{"must be an RFC 9562 UUID (variant 10xx)"}
	}
	if v := id.Version(); v != 4 && v != 7 {
		return ID{}, &IDError{fmt.Sprintf("must be a UUID of version 4 or 7, got version %d", v)}
	}
	return ID{id}, nil
}
