package changelog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// describedFields is the order a description names fields in: what a
// person decides on first.
var describedFields = []string{"status", "priority", "assignee", "labels", "title", "description"}

// maxMoves is how many distinct moves of one field a description names
// before it counts the rest.
const maxMoves = 3

// Describe says in one line what a write did (or would do) to a set
// of tickets, field by field with the moves and how many tickets made each:
// "status open → closed (10), resolved → closed (2); priority high → low (12)".
// Labels are told as added (+) and removed (-). It is "" when nothing
// changes. Both the approval prompt and the bulk answer's text say it, so
// "close 12 tickets" and "reassign 12 and lower their priority" read apart.
func Describe(perTicket []Changes) string {
	var parts []string
	for _, field := range describedFields {
		counts := map[string]int{}
		for _, c := range perTicket {
			ch, ok := c[field]
			if !ok {
				continue
			}
			for _, move := range moveTexts(field, ch) {
				counts[move]++
			}
		}
		if len(counts) > 0 {
			parts = append(parts, field+" "+countedMoves(counts))
		}
	}
	return strings.Join(parts, "; ")
}

// moveTexts is one ticket's change of field as the moves a description
// counts: "open → closed", or for labels each label added or removed. A
// title or description is too long to repeat: it is "changed".
func moveTexts(field string, ch Change) []string {
	switch field {
	case "labels":
		from, to := labelList(ch.From), labelList(ch.To)
		var out []string
		for _, l := range to {
			if !slices.Contains(from, l) {
				out = append(out, "+"+l)
			}
		}
		for _, l := range from {
			if !slices.Contains(to, l) {
				out = append(out, "-"+l)
			}
		}
		return out
	case "title", "description":
		return []string{"changed"}
	}
	return []string{Text(ch.From) + " → " + Text(ch.To)}
}

// countedMoves renders moves with their counts, the most common first, at
// most maxMoves of them.
func countedMoves(counts map[string]int) string {
	moves := make([]string, 0, len(counts))
	for m := range counts {
		moves = append(moves, m)
	}
	slices.SortFunc(moves, func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	shown := make([]string, 0, maxMoves+1)
	for i, m := range moves {
		if i == maxMoves {
			shown = append(shown, fmt.Sprintf("and %d other moves", len(moves)-maxMoves))
			break
		}
		shown = append(shown, fmt.Sprintf("%s (%d)", m, counts[m]))
	}
	return strings.Join(shown, ", ")
}

// labelList reads a labels change's side: []string as a write makes it,
// []any as a recorded event decodes.
func labelList(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		out := make([]string, 0, len(x))
		for _, l := range x {
			out = append(out, fmt.Sprint(l))
		}
		return out
	}
	return nil
}

// Text renders one side of a Change for a person: a string, "none"
// (unassigned) or a label list.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "none"
	case string:
		return x
	case []string, []any:
		if l := labelList(x); len(l) > 0 {
			return strings.Join(l, ", ")
		}
		return "no labels"
	}
	return fmt.Sprint(v)
}
