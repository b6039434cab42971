package operations_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/operations"
)

func TestParseID(t *testing.T) {
	t.Parallel()
	v4, v7 := uuid.NewString(), uuid.Must(uuid.NewV7()).String()
	accept := []string{v4, v7, strings.ToUpper(v4)}
	reject := []string{
		"", "x", uuid.Nil.String(), "{" + v4 + "}", "urn:uuid:" + v4, strings.ReplaceAll(v4, "-", ""),
		uuid.Must(uuid.NewUUID()).String(),                   // version 1
		uuid.NewMD5(uuid.NameSpaceDNS, []byte("x")).String(), // version 3: derived, predictable
		v4[:35] + "g",
		"ffffffff-ffff-4fff-ffff-ffffffffffff", // version 4 nibble, wrong variant
	}
	for _, s := range accept {
		id, err := operations.ParseID(s)
		if err != nil || id.String() != strings.ToLower(s) {
			t.Errorf("ParseID(%q) = %v, %v; want accepted", s, id, err)
		}
	}
	for _, s := range reject {
		_, err := operations.ParseID(s)
		if err == nil {
			t.Errorf("ParseID(%q) accepted", s)
		}
		// The reason names no field: each caller names its own.
		var bad *operations.IDError
		if !errors.As(err, &bad) || bad.Reason == "" || strings.Contains(bad.Reason, "operation") {
			t.Errorf("ParseID(%q) = %v, want an *IDError whose reason names no field", s, err)
		}
	}
}

func FuzzParseID(f *testing.F) {
	f.Add(uuid.NewString())
	f.Add(uuid.Must(uuid.NewV7()).String())
	f.Add("{" + uuid.NewString() + "}")
	f.Add(uuid.Nil.String())
	f.Fuzz(func(t *testing.T, s string) {
		id, err := operations.ParseID(s)
		if err != nil {
			return
		}
		if v := id.UUID().Version(); v != 4 && v != 7 {
			t.Fatalf("accepted version %d: %q", v, s)
		}
		if id.String() != strings.ToLower(s) {
			t.Fatalf("accepted non-canonical %q as %s", s, id)
		}
	})
}
