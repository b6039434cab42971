package contract

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/tickets"
)

// SummaryJSON writes what json.Marshal writes for SummaryOf, for plain
// summaries it writes by hand and for any other (escapes, Unicode, invalid
// UTF-8, control characters, other time zones, years JSON refuses).
func FuzzSummaryJSONIsJSONMarshal(f *testing.F) {
	f.Add("SUP-12", "support", "Printer on fire", "open", "high", "", "hardware,office", int64(3), int64(1764693000123456789), true)
	f.Add("SUP-1", "support", "Printer <on fire> & \"smoke\"", "closed", "low", "dev", "a&b,ünï", int64(1), int64(0), true)
	f.Add("K-9", "p", "tab\there\u2028\xff", "in_progress", "urgent", "x\\y", "", int64(-1), int64(-62135596800), false)
	f.Add("", "", "", "", "", "", ",", int64(0), int64(253402300800), true)
	f.Fuzz(func(t *testing.T, key, project, title, status, priority, assignee, labels string, version, unixNano int64, utc bool) {
		at := time.Unix(0, unixNano)
		if utc {
			at = at.UTC()
		} else {
			at = at.In(time.FixedZone("x", 5400))
		}
		tk := tickets.Ticket{ID: uuid.NewSHA1(uuid.Nil, []byte(title)), Key: key, ProjectID: project, Title: title,
			Status: tickets.Status(status), Priority: tickets.Priority(priority), Assignee: assignee, Version: version, UpdatedAt: at}
		if labels != "" {
			tk.Labels = strings.Split(labels, ",")
		}
		want, wantErr := json.Marshal(SummaryOf(tk))
		got, err := SummaryJSON(tk)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("SummaryJSON error %v, json.Marshal's %v", err, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("SummaryJSON\n got %s\nwant %s", got, want)
		}
	})
}

// plainSummaryJSON writes TicketSummary's members in order by hand: a
// member added to the struct must be added there too.
func TestSummaryJSONWritesEveryMemberOfTicketSummary(t *testing.T) {
	t.Parallel()
	written := []string{"id", "key", "project_id", "title", "status", "priority", "assignee", "labels", "version", "updated_at"}
	var names []string
	summary := reflect.TypeFor[TicketSummary]()
	for i := range summary.NumField() {
		name, _, _ := strings.Cut(summary.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	if !reflect.DeepEqual(names, written) {
		t.Errorf("TicketSummary's members %v, plainSummaryJSON writes %v", names, written)
	}
}

// BenchmarkSummaryJSON is one list item's JSON, as json.Marshal writes it
// and as SummaryJSON does.
func BenchmarkSummaryJSON(b *testing.B) {
	tk := tickets.Ticket{ID: uuid.MustParse("019ad9a5-0a62-7c4e-9d7e-2f1f6c0f5b11"), Key: "SUP-1234", ProjectID: "support",
		Title: "bench ticket 1234", Status: tickets.StatusOpen, Priority: tickets.PriorityHigh, Labels: []string{"bench", "load"},
		Version: 1, UpdatedAt: time.Date(2026, 12, 2, 4, 46, 0, 123456789, time.UTC)}
	for name, encode := range map[string]func(tickets.Ticket) ([]byte, error){
		"Marshal":     func(t tickets.Ticket) ([]byte, error) { return json.Marshal(SummaryOf(t)) },
		"SummaryJSON": SummaryJSON,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(tk); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
