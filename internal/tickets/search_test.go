package tickets_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// seedSearch creates SUP-1..SUP-10 in order, assigns some and resolves SUP-1.
func seedSearch(tb testing.TB, svc *tickets.Service) {
	tb.Helper()
	type seed struct {
		title, description, priority, assignee string
		labels                                 []string
	}
	for _, s := range []seed{
		{"Printer on fire", "The office printer is smoking", "high", "alice", []string{"hardware", "office"}},
		{"Wi-Fi drops in meeting room", "Laptops lose the network every hour", "normal", "bob", []string{"network"}},
		{"Printer jams", "Paper jam on floor 2, tray 3", "low", "", []string{"hardware"}},
		{"Password reset", "User cannot log in after the reset", "urgent", "alice", []string{"accounts"}},
		{"Café machine broken", "The espresso machine in the café leaks", "normal", "", []string{"office"}},
		{"ÉLAN dashboards slow", "Reports take 30s to load — since v1.2.3", "high", "bob", []string{"reports", "network"}},
		{"Toner order", "Order toner for the printer", "low", "alice", []string{"office"}},
		{"Mail bounces", "Replies to bob@example.com bounce; see /var/log/mail_err", "normal", "", []string{"network"}},
		{"X-ray viewer", "Doesn’t open DICOM files from the x-ray room", "urgent", "carol", nil},
		{"printer_driver", "Driver for PRINTERS on floor 3", "low", "", []string{"hardware"}},
	} {
		res, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tickets.NewTicket{
			ProjectID: "support", Title: s.title, Description: s.description, Priority: tickets.Priority(s.priority), Labels: s.labels})
		if err != nil {
			tb.Fatal(err)
		}
		if s.assignee != "" {
			update(tb, svc, tenantA, res.Ticket.Key, tickets.TicketUpdate{Assignee: &s.assignee})
		}
	}
	update(tb, svc, tenantA, "SUP-1", tickets.TicketUpdate{Status: ptr(tickets.StatusResolved)})
	// Another tenant's printer never shows.
	if _, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantB, Subject: "bob"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
		tb.Fatal(err)
	}
}

// searchKeys lists every matching key, newest first unless p sorts
// otherwise (a search's default order is the last updated first), through
// all pages.
func searchKeys(tb testing.TB, svc *tickets.Service, p tickets.ListTicketsParams) []string {
	tb.Helper()
	if p.Sort == "" {
		p.Sort = tickets.SortCreatedDesc
	}
	keys := []string{}
	for pages := 0; ; pages++ {
		if pages > 20 {
			tb.Fatal("pagination does not end")
		}
		page, err := svc.ListTickets(context.Background(), tickets.Caller{Tenant: tenantA}, p)
		if err != nil {
			tb.Fatalf("list %+v: %v", p, err)
		}
		for _, t := range page.Tickets {
			keys = append(keys, t.Key)
		}
		if p.Cursor = page.NextCursor; p.Cursor == "" {
			return keys
		}
	}
}

var searchCases = []struct {
	name string
	p    tickets.ListTicketsParams
	want []string
}{
	{"Word", tickets.ListTicketsParams{Query: "printer"}, []string{"SUP-10", "SUP-7", "SUP-3", "SUP-1"}},
	{"AllWordsAnyCase", tickets.ListTicketsParams{Query: "PRINTER  fire"}, []string{"SUP-1"}},
	{"WordInDescriptionOnly", tickets.ListTicketsParams{Query: "toner printer"}, []string{"SUP-7"}},
	{"WholeWordsOnly", tickets.ListTicketsParams{Query: "jam"}, []string{"SUP-3"}},
	{"NoStopWords", tickets.ListTicketsParams{Query: "the"}, []string{"SUP-9", "SUP-7", "SUP-5", "SUP-4", "SUP-2", "SUP-1"}},
	{"Hyphenated", tickets.ListTicketsParams{Query: "wi-fi"}, []string{"SUP-2"}},
	{"HyphenatedParts", tickets.ListTicketsParams{Query: "ray"}, []string{"SUP-9"}},
	{"Accented", tickets.ListTicketsParams{Query: "CAFÉ"}, []string{"SUP-5"}},
	{"AccentsMatter", tickets.ListTicketsParams{Query: "cafe"}, []string{}},
	{"UpperCaseNonASCII", tickets.ListTicketsParams{Query: "élan"}, []string{"SUP-6"}},
	{"Digits", tickets.ListTicketsParams{Query: "30s"}, []string{"SUP-6"}},
	{"VersionParts", tickets.ListTicketsParams{Query: "v1 2 3"}, []string{"SUP-6"}},
	{"EmailParts", tickets.ListTicketsParams{Query: "bob example"}, []string{"SUP-8"}},
	{"PathParts", tickets.ListTicketsParams{Query: "log mail err"}, []string{"SUP-8"}},
	{"Underscore", tickets.ListTicketsParams{Query: "printer driver"}, []string{"SUP-10"}},
	{"TypographicApostrophe", tickets.ListTicketsParams{Query: "doesn"}, []string{"SUP-9"}},
	{"WithLabel", tickets.ListTicketsParams{Query: "printer", Label: " HARDWARE "}, []string{"SUP-10", "SUP-3", "SUP-1"}},
	{"WithAssignee", tickets.ListTicketsParams{Query: "printer", Assignee: "alice"}, []string{"SUP-7", "SUP-1"}},
	{"WithPriority", tickets.ListTicketsParams{Query: "printer", Priority: "LOW"}, []string{"SUP-10", "SUP-7", "SUP-3"}},
	{"WithStatus", tickets.ListTicketsParams{Query: "printer", Statuses: []tickets.Status{tickets.StatusResolved}}, []string{"SUP-1"}},
	{"FiltersWithoutQuery", tickets.ListTicketsParams{Label: "network", Assignee: "bob"}, []string{"SUP-6", "SUP-2"}},
	{"AllFilters", tickets.ListTicketsParams{Query: "floor", Label: "hardware", Priority: "low", Statuses: []tickets.Status{"open"}, ProjectID: "support"}, []string{"SUP-10", "SUP-3"}},
	{"Paginated", tickets.ListTicketsParams{Query: "the", Limit: 2}, []string{"SUP-9", "SUP-7", "SUP-5", "SUP-4", "SUP-2", "SUP-1"}},
	{"Nothing", tickets.ListTicketsParams{Query: "kangaroo"}, []string{}},
	{"LabelNobodyHas", tickets.ListTicketsParams{Label: "netw"}, []string{}},
}

func TestSearchTickets(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		seedSearch(t, svc)
		for _, c := range searchCases {
			if got := searchKeys(t, svc, c.p); !slices.Equal(got, c.want) {
				t.Errorf("%s: %v; want %v", c.name, got, c.want)
			}
		}
		// A title change is searchable at once, and the old words are gone.
		update(t, svc, tenantA, "SUP-4", tickets.TicketUpdate{Title: ptr("Locked out of VPN")})
		if got := searchKeys(t, svc, tickets.ListTicketsParams{Query: "vpn"}); !slices.Equal(got, []string{"SUP-4"}) {
			t.Errorf("after retitling, vpn finds %v", got)
		}
		if got := searchKeys(t, svc, tickets.ListTicketsParams{Query: "password"}); len(got) != 0 {
			t.Errorf("after retitling, password still finds %v", got)
		}

		ctx := context.Background()
		first, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Query: "the", Limit: 2})
		if err != nil || first.NextCursor == "" {
			t.Fatal(first, err)
		}
		for name, p := range map[string]tickets.ListTicketsParams{
			"PunctuationOnly":    {Query: " !!! -- "},
			"TooManyWords":       {Query: "a b c d e f g h i j k l m n o p q"},
			"BadPriority":        {Priority: "asap"},
			"CursorOtherQuery":   {Query: "printer", Cursor: first.NextCursor},
			"CursorOtherFilter":  {Query: "the", Label: "office", Cursor: first.NextCursor},
			"CursorWithoutQuery": {Cursor: first.NextCursor},
			"NULInLabel":         {Label: "a\x00"},
		} {
			if _, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, p); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
	})
}

// TestSearchSameOnBothEngines runs every search case, and each single query
// word of the seeded text, against the same data on PostgreSQL and SQLite:
// the answers must be identical.
func TestSearchSameOnBothEngines(t *testing.T) {
	t.Parallel()
	pg, lite := newService(t, dbtest.Postgres(t)), newService(t, dbtest.SQLite(t))
	seedSearch(t, pg)
	seedSearch(t, lite)
	queries := []tickets.ListTicketsParams{}
	for _, c := range searchCases {
		queries = append(queries, c.p)
	}
	for _, w := range []string{"printer", "printers", "fire", "wi", "fi", "network", "jam", "jams", "2", "3", "café", "cafe",
		"élan", "ÉLAN", "30", "30s", "v1", "1", "bob", "com", "example.com", "var", "mail_err", "x", "ray", "x-ray", "doesn’t",
		"doesn't", "t", "dicom", "order", "the", "to", "reset", "since", "—"} {
		queries = append(queries, tickets.ListTicketsParams{Query: w})
	}
	compared := 0
	for _, p := range queries {
		_, pgErr := pg.ListTickets(context.Background(), tickets.Caller{Tenant: tenantA}, p)
		_, liteErr := lite.ListTickets(context.Background(), tickets.Caller{Tenant: tenantA}, p)
		if (pgErr == nil) != (liteErr == nil) {
			t.Errorf("%+v: postgres %v, sqlite %v", p, pgErr, liteErr)
			continue
		}
		if pgErr != nil {
			continue // both refuse it (e.g. a query of punctuation only)
		}
		compared++
		if a, b := searchKeys(t, pg, p), searchKeys(t, lite, p); !slices.Equal(a, b) {
			t.Errorf("%+v: postgres %v, sqlite %v", p, a, b)
		}
	}
	if compared < len(queries)-1 {
		t.Errorf("only %d of %d queries compared", compared, len(queries))
	}
}
