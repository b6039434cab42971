package db

import (
	"fmt"
	"strconv"
	"strings"
)

// Named is a statement written with GORM's @name placeholders, numbered
// once for Query, which sends a statement as it is: every call through
// GORM would parse and number it again. Each occurrence of a name is its
// own $n, as GORM numbers them, so a name used as two types (cast to uuid
// in one place, compared with text in another) stays one statement
// PostgreSQL accepts.
type Named struct {
	SQL   string   // with $1, $2, …
	names []string // the name of each $n, in order
}

// NewNamed numbers query's @name placeholders. An @ not followed by a
// letter or underscore (jsonb's @> operator) is left as it is; quoted text
// and comments are not skipped, so query must have no @name in them
// (Args would then ask for an argument that GORM would have left alone).
func NewNamed(query string) Named {
	var (
		b     strings.Builder
		names []string
	)
	for i := 0; i < len(query); i++ {
		if query[i] != '@' || i+1 == len(query) || !nameStart(query[i+1]) {
			b.WriteByte(query[i])
			continue
		}
		j := i + 1
		for j < len(query) && (nameStart(query[j]) || query[j] >= '0' && query[j] <= '9') {
			j++
		}
		names = append(names, query[i+1:j])
		b.WriteString("$" + strconv.Itoa(len(names)))
		i = j - 1
	}
	return Named{SQL: b.String(), names: names}
}

func nameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// Args are args in the order of n's placeholders. A name args does not
// hold is an error, not a NULL.
func (n Named) Args(args map[string]any) ([]any, error) {
	out := make([]any, len(n.names))
	for i, name := range n.names {
		v, ok := args[name]
		if !ok {
			return nil, fmt.Errorf("statement argument @%s missing", name)
		}
		out[i] = v
	}
	return out, nil
}
