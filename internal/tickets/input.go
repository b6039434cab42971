package tickets

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/fault"
)

// Limits on ticket input, in characters (Unicode code points), after trimming.
const (
	MaxTitle       = 200
	MaxDescription = 20000
	MaxLabels      = 20
	MaxLabel       = 50
	MaxProjectID   = 64
)

// MaxInputBytes bounds one encoded input, the request body of every
// transport (MCP, REST, the console's forms). It is large enough for every
// valid ticket even with each character JSON-escaped as a surrogate pair (12
// bytes for each of the MaxDescription characters, plus the JSON-RPC
// envelope), so the bound never refuses valid input and length errors come
// from the field checks, field by field. Anything bigger is refused (413)
// before it is buffered.
const MaxInputBytes = 256 << 10

// Priorities, in increasing urgency.
var Priorities = []Priority{PriorityLow, PriorityNormal, PriorityHigh, PriorityUrgent}

// The validation vocabulary is internal/fault's, shared with the packages
// beside this one (internal/people).
var (
	// ErrInvalid marks input that failed validation. Nothing was attempted.
	ErrInvalid    = fault.ErrInvalid
	invalidField  = fault.Invalid
	canonicalText = fault.CanonicalText
	checkText     = fault.CheckText
)

// FieldError says what is wrong with one field.
type FieldError = fault.FieldError

// ValidationError lists every problem found in one input. It matches
// ErrInvalid with errors.Is.
type ValidationError = fault.ValidationError

// Normalize returns the canonical form of a new ticket, or a
// *ValidationError listing every problem. Two inputs that mean the same
// ticket (surrounding spaces, label case and order, duplicate labels, an
// omitted default priority, Unicode composition) normalise to the same value,
// so their fingerprints match. Normalize is idempotent.
func Normalize(in NewTicket) (NewTicket, error) {
	var (
		out  NewTicket
		errs []FieldError
	)
	bad := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	text := func(field, s string, maxLen int, required, fold bool) string {
		if msg := checkText(s); msg != "" {
			bad(field, "%s", msg)
			return ""
		}
		s = canonicalText(s, fold)
		switch n := utf8.RuneCountInString(s); {
		case required && n == 0:
			bad(field, "is required and must not be blank")
		case n > maxLen:
			bad(field, "must be at most %d characters after trimming, got %d", maxLen, n)
		}
		return s
	}

	out.ProjectID = text("project_id", in.ProjectID, MaxProjectID, true, true)
	out.Title = text("title", in.Title, MaxTitle, true, false)
	out.Description = text("description", in.Description, MaxDescription, false, false)
	out.Parent = canonicalText(in.Parent, false)

	out.Priority = Priority(strings.ToLower(strings.TrimSpace(string(in.Priority))))
	if out.Priority == "" {
		out.Priority = PriorityNormal
	}
	if !slices.Contains(Priorities, out.Priority) {
		bad("priority", "must be one of low, normal, high, urgent; got %q", in.Priority)
	}

	out.Labels = normalizeLabels("labels", in.Labels, bad)

	if len(errs) > 0 {
		return NewTicket{}, &ValidationError{Fields: errs}
	}
	return out, nil
}

// normalizeLabels trims, folds, composes, sorts and de-duplicates labels, the
// one rule for create_ticket's labels and update_ticket's add_labels and
// remove_labels, reporting each bad label (and too many) through bad. The
// result is never nil.
func normalizeLabels(field string, in []string, bad func(field, format string, args ...any)) []string {
	out := make([]string, 0, len(in))
	for i, l := range in {
		f := fmt.Sprintf("%s[%d]", field, i)
		if msg := checkText(l); msg != "" {
			bad(f, "%s", msg)
			continue
		}
		l = canonicalText(l, true)
		switch n := utf8.RuneCountInString(l); {
		case n == 0:
			bad(f, "must not be blank")
		case n > MaxLabel:
			bad(f, "must be at most %d characters after trimming, got %d", MaxLabel, n)
		default:
			out = append(out, l)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxLabels {
		bad(field, "at most %d distinct labels, got %d", MaxLabels, len(out))
	}
	return out
}

// Fingerprint is the SHA-256 (hex) of the canonical JSON of a normalised
// ticket: what makes two calls the same intended ticket.
func Fingerprint(n NewTicket) string {
	canonical, err := json.Marshal(struct {
		ProjectID   string   `json:"project_id"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Priority    Priority `json:"priority"`
		Labels      []string `json:"labels"`
		Parent      string   `json:"parent,omitempty"`
	}{n.ProjectID, n.Title, n.Description, n.Priority, n.Labels, n.Parent})
	if err != nil {
		panic(fmt.Sprintf("marshal fingerprint input: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}
