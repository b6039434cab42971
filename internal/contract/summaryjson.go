package contract

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/tickets"
)

// SummaryJSON is json.Marshal(SummaryOf(t)), byte for byte, written by hand
// when every string of the summary is printable ASCII that JSON writes as
// it is (no quote, backslash or HTML character to escape) and its time is
// UTC: a list page measures each summary as this JSON and sends it, and
// encoding/json's reflection was most of that cost, 5 allocations a
// summary (docs/perf.md). Any other summary is left to json.Marshal.
func SummaryJSON(t tickets.Ticket) ([]byte, error) {
	if b, ok := plainSummaryJSON(t); ok {
		return b, nil
	}
	b, err := json.Marshal(SummaryOf(t))
	if err != nil {
		return nil, fmt.Errorf("encode ticket summary: %w", err)
	}
	return b, nil
}

// plainSummaryJSON writes the summary of t in TicketSummary's field order
// (TestSummaryJSONWritesEveryMemberOfTicketSummary holds the two together);
// ok is false when a string needs escaping or the time is not UTC.
func plainSummaryJSON(t tickets.Ticket) (b []byte, ok bool) {
	if t.UpdatedAt.Location() != time.UTC || t.UpdatedAt.Year() > 9999 || t.UpdatedAt.Year() < 0 {
		return nil, false
	}
	size := len(`{"id":"00000000-0000-0000-0000-000000000000","key":"","project_id":"","title":"","status":"","priority":"",` +
		`"assignee":null,"labels":[],"version":-9223372036854775808,"updated_at":"2006-01-02T15:04:05.999999999Z"}`)
	for _, texts := range [][]string{{t.Key, t.ProjectID, t.Title, string(t.Status), string(t.Priority), t.Assignee}, t.Labels} {
		for _, s := range texts {
			if !plainText(s) {
				return nil, false
			}
			size += len(s) + 3
		}
	}
	b = make([]byte, 0, size)
	b = appendUUID(append(b, `{"id":"`...), t.ID)
	b = appendMember(b, `","key":"`, t.Key)
	b = appendMember(b, `","project_id":"`, t.ProjectID)
	b = appendMember(b, `","title":"`, t.Title)
	b = appendMember(b, `","status":"`, string(t.Status))
	b = appendMember(b, `","priority":"`, string(t.Priority))
	if t.Assignee == "" {
		b = append(b, `","assignee":null,"labels":[`...)
	} else {
		b = appendMember(b, `","assignee":"`, t.Assignee)
		b = append(b, `","labels":[`...)
	}
	for i, label := range t.Labels {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, '"'), label...), '"')
	}
	b = strconv.AppendInt(append(b, `],"version":`...), t.Version, 10)
	b = t.UpdatedAt.AppendFormat(append(b, `,"updated_at":"`...), time.RFC3339Nano)
	return append(b, `"}`...), true
}

func appendMember(b []byte, name, value string) []byte {
	return append(append(b, name...), value...)
}

// appendUUID appends id as uuid.UUID.String writes it, without the string.
func appendUUID(b []byte, id uuid.UUID) []byte {
	var text [36]byte
	hex.Encode(text[0:8], id[0:4])
	hex.Encode(text[9:13], id[4:6])
	hex.Encode(text[14:18], id[6:8])
	hex.Encode(text[19:23], id[8:10])
	hex.Encode(text[24:], id[10:])
	text[8], text[13], text[18], text[23] = '-', '-', '-', '-'
	return append(b, text[:]...)
}

// plainText reports whether json.Marshal writes s as it is between quotes:
// printable ASCII but for the quote, the backslash and <, >, & (which it
// escapes for HTML).
func plainText(s string) bool {
	for i := range len(s) {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}
