// Package changelog is the codec of a history event's changes (the
// ticket_events.changes column, and what the contract shows): field by field,
// from and to, read back into the same Go types the write produced, so a
// replayed answer equals the first one.
package changelog

import (
	"encoding/json"
	"fmt"
)

// Change is one field's move: From and To are a string, nil (an unassigned
// assignee) or a []string (labels).
type Change struct {
	From any
	To   any
}

// Changes maps a field name (title, description, priority, status, assignee,
// labels, parent) to its change. An update that changed nothing has none.
type Changes map[string]Change

// storedChange is a Change as the changes column holds it (and as the
// contract shows it): {"field":{"from","to"}}.
type storedChange struct {
	From json.RawMessage `json:"from"`
	To   json.RawMessage `json:"to"`
}

// Encode is c as the changes column holds it.
func Encode(c Changes) (string, error) {
	out := make(map[string]storedChange, len(c))
	for field, ch := range c {
		from, err := json.Marshal(ch.From)
		if err != nil {
			return "", fmt.Errorf("encode change of %s: %w", field, err)
		}
		to, err := json.Marshal(ch.To)
		if err != nil {
			return "", fmt.Errorf("encode change of %s: %w", field, err)
		}
		out[field] = storedChange{From: from, To: to}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", fmt.Errorf("encode changes: %w", err)
	}
	return string(b), nil
}

// Decode reads the changes column back into the same Go types the
// write produced, so a replayed answer equals the first one.
func Decode(text string) (Changes, error) {
	var stored map[string]storedChange
	if err := json.Unmarshal([]byte(text), &stored); err != nil {
		return nil, fmt.Errorf("bad changes: %w", err)
	}
	out := make(Changes, len(stored))
	for field, sc := range stored {
		from, err := decodeChangeValue(field, sc.From)
		if err != nil {
			return nil, err
		}
		to, err := decodeChangeValue(field, sc.To)
		if err != nil {
			return nil, err
		}
		out[field] = Change{From: from, To: to}
	}
	return out, nil
}

func decodeChangeValue(field string, raw json.RawMessage) (any, error) {
	if field == "labels" {
		labels := []string{}
		if err := json.Unmarshal(raw, &labels); err != nil {
			return nil, fmt.Errorf("bad change of labels: %w", err)
		}
		return labels, nil
	}
	var s *string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("bad change of %s: %w", field, err)
	}
	if s == nil {
		return nil, nil
	}
	return *s, nil
}
