package observe

import (
	"strconv"

	"github.com/ticketd/ticketd/internal/errcode"
)

// Outcome is the result of one write operation as an operator counts it: the
// closed set of values of the outcome label of ticketd_operations_total
// (docs/contract.md#metrics). Being an enumeration, not a string, it cannot grow the
// label's cardinality.
type Outcome uint8

// The outcomes.
const (
	// Created: the write ran now and committed.
	Created Outcome = iota
	// Replayed: a retry with the same key and input returned the recorded result.
	Replayed
	// Conflict: the key was already used with different input (idempotency_conflict).
	Conflict
	// InProgress: the same key was running concurrently (operation_in_progress).
	InProgress
	// Unknown: the COMMIT reply was lost; the write may have landed (outcome_unknown).
	Unknown
	// Invalid: the input was rejected before anything ran.
	Invalid
	// Failed: the write did not happen for any other reason.
	Failed

	numOutcomes
)

var outcomeNames = [numOutcomes]string{
	Created:    "created",
	Replayed:   "replayed",
	Conflict:   "conflict",
	InProgress: "in_progress",
	Unknown:    "unknown",
	Invalid:    "invalid",
	Failed:     "failed",
}

// String returns the label value.
func (o Outcome) String() string {
	if o >= numOutcomes {
		return "Outcome(" + strconv.Itoa(int(o)) + ")"
	}
	return outcomeNames[o]
}

// outcomeNamed finds the outcome whose label is name.
func outcomeNamed(name string) (Outcome, bool) {
	for o, n := range outcomeNames {
		if n == name {
			return Outcome(o), true
		}
	}
	return 0, false
}

// OutcomeOf maps a write's result to its outcome: code is the contract error
// code (docs/contract.md#error-codes; "" when the write succeeded) and
// replayed the flag of a successful result. A failure counts as its row of
// errcode.Table says (Row.Outcome), so the outcome rates read the same as
// the retry contract and a new code is counted by its row alone. It reports
// false for the codes that are not an operation's outcome but a refusal at
// the edge (errcode.NotCounted: unauthenticated, forbidden, rate_limited):
// those calls never reached the ledger, and requests_total already counts
// them. A code without a row counts as Internal's, failed.
func OutcomeOf(code string, replayed bool) (Outcome, bool) {
	if code == "" {
		if replayed {
			return Replayed, true
		}
		return Created, true
	}
	row := errcode.Lookup(errcode.Code(code))
	if row.Outcome == errcode.NotCounted {
		return 0, false
	}
	if o, ok := outcomeNamed(string(row.Outcome)); ok {
		return o, true
	}
	// errcode's tests require every row's outcome to be one of ours.
	return Failed, true
}
