// Package fault is the error vocabulary of ticketd's domain packages
// (tickets, people): the sentinels internal/errcode classifies and the
// validation error both transports turn into field lists. It sits below
// them all, so a package beside tickets reports its failures in the same
// words without importing tickets.
package fault

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ErrInvalid marks input that failed validation. Nothing was attempted.
var ErrInvalid = errors.New("invalid input")

// ErrNotFound: no such ticket, project or user for this tenant (another
// tenant's are indistinguishable from absent ones).
var ErrNotFound = errors.New("not found")

// ErrExists: a project with that ID or key, or a user with that ID, already
// exists for the tenant.
var ErrExists = errors.New("already exists")

// ErrUnavailable: the store failed before anything was committed.
var ErrUnavailable = errors.New("ticket store unavailable")

// FieldError says what is wrong with one field.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// ValidationError lists every problem found in one input. It matches
// ErrInvalid with errors.Is.
type ValidationError struct {
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid input: " + strings.Join(parts, "; ")
}

// Is makes errors.Is(err, ErrInvalid) true for validation errors.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// Invalid returns a validation error about one field.
func Invalid(field, format string, args ...any) *ValidationError {
	return &ValidationError{Fields: []FieldError{{Field: field, Message: fmt.Sprintf(format, args...)}}}
}

// CanonicalText is s as stored and compared: NFC, trimmed, and lower-cased
// when fold is set.
func CanonicalText(s string, fold bool) string {
	if fold {
		s = strings.ToLower(s)
	}
	return strings.TrimSpace(norm.NFC.String(s))
}

// CheckText rejects what no database column can hold faithfully: it says
// why, or returns "".
func CheckText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "must be valid UTF-8"
	case strings.ContainsRune(s, 0):
		return "must not contain NUL characters"
	}
	return ""
}
