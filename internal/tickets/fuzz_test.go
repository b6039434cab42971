package tickets_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/tickets"
)

func FuzzNormalize(f *testing.F) {
	f.Add("support", "Printer on fire", "", "high", "Hardware,office", "SUPPORT", " Printer on fire ", "HIGH", "office,hardware,office")
	f.Add("support", "  ", "desc", "", "", "support", "x", "", "")
	f.Add("s", "e\u0301", "\x00", "urgent", "A, a", "s", "\u00e9", "", "a")
	f.Add("\xff", "t", "", "nope", ",", "", "", "low", strings.Repeat("x,", 30))
	f.Fuzz(func(t *testing.T, p1, t1, d1, pr1, l1, p2, t2, pr2, l2 string) {
		a := tickets.NewTicket{ProjectID: p1, Title: t1, Description: d1, Priority: tickets.Priority(pr1), Labels: splitLabels(l1)}
		b := tickets.NewTicket{ProjectID: p2, Title: t2, Description: d1, Priority: tickets.Priority(pr2), Labels: splitLabels(l2)}
		na, errA := tickets.Normalize(a)
		nb, errB := tickets.Normalize(b)
		for _, c := range []struct {
			n   tickets.NewTicket
			err error
		}{{na, errA}, {nb, errB}} {
			if c.err != nil {
				if !errors.Is(c.err, tickets.ErrInvalid) {
					t.Fatalf("error %v does not match ErrInvalid", c.err)
				}
				continue
			}
			checkNormalised(t, c.n)
		}
		if errA != nil || errB != nil {
			return
		}
		sameInput := reflect.DeepEqual(na, nb)
		sameFingerprint := tickets.Fingerprint(na) == tickets.Fingerprint(nb)
		if sameInput != sameFingerprint {
			t.Fatalf("normalised equal=%v but fingerprints equal=%v:\n%#v\n%#v", sameInput, sameFingerprint, na, nb)
		}
	})
}

// checkNormalised asserts what every normalised ticket satisfies: it is a
// fixed point of Normalize and within the limits.
func checkNormalised(t *testing.T, n tickets.NewTicket) {
	t.Helper()
	again, err := tickets.Normalize(n)
	if err != nil {
		t.Fatalf("normalised input %#v fails validation: %v", n, err)
	}
	if !reflect.DeepEqual(again, n) {
		t.Fatalf("Normalize is not idempotent:\n%#v\n%#v", n, again)
	}
	if c := utf8.RuneCountInString(n.Title); c < 1 || c > tickets.MaxTitle {
		t.Fatalf("title of %d characters accepted", c)
	}
	if len(n.Labels) > tickets.MaxLabels {
		t.Fatalf("%d labels accepted", len(n.Labels))
	}
}

func splitLabels(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("é", n) }
	labels := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		}
		return out
	}
	valid := func(mod func(*tickets.NewTicket)) tickets.NewTicket {
		in := tickets.NewTicket{ProjectID: "support", Title: "t"}
		mod(&in)
		return in
	}
	cases := map[string]struct {
		in        tickets.NewTicket
		wantField string // empty: valid
	}{
		"MinimalIsValid":          {valid(func(*tickets.NewTicket) {}), ""},
		"BlankTitle":              {valid(func(in *tickets.NewTicket) { in.Title = " \t\n" }), "title"},
		"TitleAt200":              {valid(func(in *tickets.NewTicket) { in.Title = long(200) }), ""},
		"TitleAt201":              {valid(func(in *tickets.NewTicket) { in.Title = long(201) }), "title"},
		"TitleTrimmedTo200":       {valid(func(in *tickets.NewTicket) { in.Title = "  " + long(200) + "  " }), ""},
		"DescriptionAt20001":      {valid(func(in *tickets.NewTicket) { in.Description = long(20001) }), "description"},
		"UnknownPriority":         {valid(func(in *tickets.NewTicket) { in.Priority = "asap" }), "priority"},
		"PriorityCaseInsensitive": {valid(func(in *tickets.NewTicket) { in.Priority = " URGENT " }), ""},
		"TwentyLabels":            {valid(func(in *tickets.NewTicket) { in.Labels = labels(20) }), ""},
		"TwentyOneLabels":         {valid(func(in *tickets.NewTicket) { in.Labels = labels(21) }), "labels"},
		"DuplicateLabelsCollapse": {valid(func(in *tickets.NewTicket) { in.Labels = append(labels(20), "A", " a ") }), ""},
		"BlankLabel":              {valid(func(in *tickets.NewTicket) { in.Labels = []string{"ok", "  "} }), "labels[1]"},
		"LabelAt51":               {valid(func(in *tickets.NewTicket) { in.Labels = []string{strings.Repeat("x", 51)} }), "labels[0]"},
		"MissingProject":          {valid(func(in *tickets.NewTicket) { in.ProjectID = "" }), "project_id"},
		"InvalidUTF8":             {valid(func(in *tickets.NewTicket) { in.Title = "bad \xff" }), "title"},
		"NULCharacter":            {valid(func(in *tickets.NewTicket) { in.Description = "a\x00b" }), "description"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := tickets.Normalize(c.in)
			var ve *tickets.ValidationError
			switch {
			case c.wantField == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.wantField == "":
			case !errors.As(err, &ve):
				t.Fatalf("err = %v, want a ValidationError on %s", err, c.wantField)
			case ve.Fields[0].Field != c.wantField:
				t.Fatalf("error on %q (%v), want %q", ve.Fields[0].Field, err, c.wantField)
			}
		})
	}

	n, err := tickets.Normalize(tickets.NewTicket{ProjectID: " Support ", Title: " Cafe\u0301 ", Labels: []string{"B", "a", "b "}})
	if err != nil {
		t.Fatal(err)
	}
	want := tickets.NewTicket{ProjectID: "support", Title: "Caf\u00e9", Priority: tickets.PriorityNormal, Labels: []string{"a", "b"}}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("Normalize = %#v, want %#v", n, want)
	}
}
