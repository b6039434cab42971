package db

import (
	"slices"
	"testing"
)

func TestNamedNumbersEveryOccurrence(t *testing.T) {
	t.Parallel()
	n := NewNamed(`SELECT CAST(@op AS uuid), @tenant_1, labels @> @labels, @op FROM t WHERE a = @tenant_1 AND b = 'x@'`)
	const want = `SELECT CAST($1 AS uuid), $2, labels @> $3, $4 FROM t WHERE a = $5 AND b = 'x@'`
	if n.SQL != want {
		t.Errorf("SQL = %q\nwant  %q", n.SQL, want)
	}
	args, err := n.Args(map[string]any{"op": "o", "tenant_1": "t", "labels": "l"})
	if err != nil || !slices.Equal(args, []any{"o", "t", "l", "o", "t"}) {
		t.Errorf("Args = %v, %v; want [o t l o t]", args, err)
	}
	if _, err := n.Args(map[string]any{"op": "o"}); err == nil {
		t.Error("Args without @tenant_1 and @labels: no error")
	}
}
