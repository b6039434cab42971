package observe

import "strconv"

// Outcome is the result of one write operation as an operator counts it: the
// closed set of values of the outcome label of ticketd_operations_total
// (DESIGN §13). Being an enumeration, not a string, it cannot grow the
// label's cardinality.
type Outcome uint8

// The outcomes.
const (
	// Created: the write ran now and committed.
	Created Outcome = iota
	// Replayed: a retry with the same key and input returned the recorded result.
	Replayed
	// Conflict: the key was already used with different input
	// (idempotency_conflict), or applied once before its record was pruned
	// (operation_expired).
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

// OutcomeOf maps a write's result to its outcome: code is the contract error
// code of DESIGN §3 ("" when the write succeeded) and replayed the flag of a
// successful result. It reports false for the codes that are not an
// operation's outcome but a refusal at the edge (unauthenticated, forbidden,
// rate_limited): those calls never reached the ledger, and requests_total
// already counts them.
//
// The mapping, so that the outcome rates read the same as the retry contract:
//
//	""                      created, or replayed when replayed is true
//	idempotency_conflict, operation_expired
//	                        conflict
//	operation_in_progress   in_progress
//	outcome_unknown         unknown (never merged with anything else)
//	invalid_input, version_conflict, not_found, already_exists
//	                        invalid: rejected on its input, nothing written
//	operation_failed, unavailable, internal and any code added later
//	                        failed
func OutcomeOf(code string, replayed bool) (Outcome, bool) {
	switch code {
	case "":
		if replayed {
			return Replayed, true
		}
		return Created, true
	case "idempotency_conflict", "operation_expired":
		return Conflict, true
	case "operation_in_progress":
		return InProgress, true
	case "outcome_unknown":
		return Unknown, true
	case "invalid_input", "version_conflict", "not_found", "already_exists":
		return Invalid, true
	case "unauthenticated", "forbidden", "rate_limited":
		return 0, false
	}
	return Failed, true
}
