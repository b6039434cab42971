package jira_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
)

// FuzzDocumentRoundTrip: any text ticketd writes as ADF reads back as the
// same text, so a marker it wrote is always found again.
func FuzzDocumentRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a", "\n", "\n\n", "a\n\n\nb", "It jams.\nOn line 3.\n\n" + tracker.Marker("acme", "op-1"), "x\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			t.Skip("JSON carries valid UTF-8 only")
		}
		raw, err := json.Marshal(jira.Document(s))
		if err != nil {
			t.Fatal(err)
		}
		if got := jira.DocumentText(raw); got != s {
			t.Errorf("DocumentText(Document(%q)) = %q", s, got)
		}
	})
}

// FuzzDocumentText: whatever a tracker sends as a description or a comment
// body, reading it as text neither panics nor makes more of it than a few
// characters per byte it read.
func FuzzDocumentText(f *testing.F) {
	for _, s := range []string{
		`{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"hi"},{"type":"hardBreak"},{"type":"mention","attrs":{"text":"@ada"}}]}]}`,
		`{"type":"doc","content":[{"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"a"}]}]}]}]}`,
		`{"type":"doc","content":[{"type":"emoji","attrs":{"text":7}}]}`, `null`, `"text"`, `{"type":"doc","content":null}`, `[`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := jira.DocumentText(raw)
		if len(got) > 2*len(raw)+16 {
			t.Errorf("DocumentText made %d bytes of %d", len(got), len(raw))
		}
	})
}

// FuzzRetryAfter: any Retry-After a tracker sends is a wait between one
// second and an hour.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "1", "0", "120", "-5", "18446744073709551615", "Wed, 21 Oct 2015 07:28:00 GMT", "soon", " 3 "} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := jira.RetryAfter(v, now)
		if d < time.Second || d > time.Hour {
			t.Errorf("RetryAfter(%q) = %s, outside [1s, 1h]", v, d)
		}
	})
}

// TestRetryAfterReadsSecondsAndDates pins the readings the fuzz test only
// bounds.
func TestRetryAfterReadsSecondsAndDates(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"1": time.Second, "120": 2 * time.Minute, "0": time.Second, "999999": time.Hour, "": time.Minute, "soon": time.Minute,
		now.Add(90 * time.Second).Format(http1123): 90 * time.Second, now.Add(-time.Hour).Format(http1123): time.Second,
	} {
		if got := jira.RetryAfter(v, now); got != want {
			t.Errorf("RetryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"

// TestDocumentTextReadsWhatPeopleWrite: a document a person wrote in
// Jira's editor (a list, a mention) reads as its text, the marker found.
func TestDocumentTextReadsWhatPeopleWrite(t *testing.T) {
	t.Parallel()
	raw := `{"type":"doc","version":1,"content":[
		{"type":"paragraph","content":[{"type":"text","text":"Ask "},{"type":"mention","attrs":{"id":"1","text":"@Ada"}},{"type":"text","text":"."}]},
		{"type":"bulletList","content":[{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"one"}]}]},
			{"type":"listItem","content":[{"type":"paragraph","content":[{"type":"text","text":"two"}]}]}]},
		{"type":"paragraph","content":[{"type":"text","text":"<!-- ticketd:operation=acme/op-1 -->"}]}]}`
	got := jira.DocumentText(json.RawMessage(raw))
	if want := "Ask @Ada.\n\none\ntwo\n\n<!-- ticketd:operation=acme/op-1 -->"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if !strings.Contains(got, tracker.Marker("acme", "op-1")) {
		t.Error("the marker is not found in the text")
	}
}
