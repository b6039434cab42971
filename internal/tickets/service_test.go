package tickets_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

const (
	tenantA = "acme"
	tenantB = "globex"
)

// newService returns a service over d with project "support" (key SUP) for
// tenantA and tenantB.
func newService(tb testing.TB, d *db.DB) *tickets.Service {
	tb.Helper()
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	ticketstest.SeedSupport(tb, svc, tenantA, tenantB)
	return svc
}

func newID() string { return uuid.NewString() }

func printerTicket() tickets.NewTicket {
	return tickets.NewTicket{ProjectID: "support", Title: "Printer on fire", Priority: "high", Labels: []string{"Hardware", "office"}}
}

func countTickets(tb testing.TB, d *db.DB, tenant string) int64 {
	tb.Helper()
	var n int64
	if err := d.Gorm.Table("tickets").Where("tenant_id = ?", tenant).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

func countOperations(tb testing.TB, d *db.DB, tenant string) int64 {
	tb.Helper()
	var n int64
	if err := d.Gorm.Table("operations").Where("tenant_id = ?", tenant).Count(&n).Error; err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestCreateTicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)

		t.Run("FirstCallCreatesAndRetryReplays", func(t *testing.T) {
			id := newID()
			first, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if first.Replayed {
				t.Error("first call reported replayed")
			}
			if first.Ticket.Key != "SUP-1" || first.Ticket.Status != tickets.StatusOpen || first.Ticket.Reporter != "alice" {
				t.Errorf("ticket = %+v", first.Ticket)
			}
			if !slices.Equal(first.Ticket.Labels, []string{"hardware", "office"}) {
				t.Errorf("labels = %q, want normalised", first.Ticket.Labels)
			}
			// A retry that differs only in what normalisation removes is the same intent.
			retry := printerTicket()
			retry.Title = "  Printer on fire "
			retry.Labels = []string{"office", "HARDWARE", "office"}
			second, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), retry)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if !second.Replayed || second.Ticket.ID != first.Ticket.ID {
				t.Errorf("retry = %+v, want replay of %s", second, first.Ticket.ID)
			}
			// The first answer is built in memory; it must read exactly as stored.
			if !reflect.DeepEqual(second.Ticket, first.Ticket) {
				t.Errorf("replayed ticket differs from the first answer:\n%+v\n%+v", second.Ticket, first.Ticket)
			}
			if n := countTickets(t, d, tenantA); n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
	})
}

func TestCreateTicketConflictWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		id := newID()
		first, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
		if err != nil {
			t.Fatal(err)
		}
		other := printerTicket()
		other.Title = "Printer on fire again"
		_, err = svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), other)
		if !errors.Is(err, operations.ErrConflict) {
			t.Fatalf("err = %v, want ErrConflict", err)
		}
		if n := countTickets(t, d, tenantA); n != 1 {
			t.Errorf("%d tickets after conflict, want 1", n)
		}
		st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
		if err != nil || st.Ticket == nil || st.Ticket.ID != first.Ticket.ID {
			t.Errorf("operation after conflict = %+v, %v; want the first ticket", st, err)
		}
	})
}

func TestCreateTicketInvalidInputRecordsNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		id := newID()
		bad := []tickets.NewTicket{
			{ProjectID: "support", Title: "   "},
			{ProjectID: "support", Title: "x", Priority: "asap"},
			{ProjectID: "nope", Title: "x"},
		}
		for _, in := range bad {
			_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in)
			if !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("CreateTicket(%+v) err = %v, want ErrInvalid", in, err)
			}
		}
		if n := countOperations(t, d, tenantA); n != 0 {
			t.Fatalf("%d operation records after invalid input, want 0", n)
		}
		if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("GetOperation after invalid input: %v, want ErrNotFound", err)
		}
		res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
		if err != nil || res.Replayed {
			t.Fatalf("same ID after invalid input = %+v, %v; want a fresh create", res, err)
		}
	})
}

func TestCreateTicketUnknownProjectNamesKnownOnes(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		_, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), tickets.NewTicket{ProjectID: "sales", Title: "x"})
		var ve *tickets.ValidationError
		if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "project_id" {
			t.Fatalf("err = %v, want a project_id validation error", err)
		}
		// Transport-neutral: each transport says how its callers list projects.
		if want := `unknown project "sales"; known projects: support`; ve.Fields[0].Message != want {
			t.Errorf("message = %q, want %q", ve.Fields[0].Message, want)
		}
		if !errors.Is(err, tickets.ErrUnknownProject) || !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("err = %v, want ErrUnknownProject and ErrInvalid", err)
		}
	})
}

func TestCreateTicketRejectsBadOperationIDs(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		for _, id := range []string{
			"", "not-a-uuid", uuid.Nil.String(), "{" + uuid.NewString() + "}", "urn:uuid:" + uuid.NewString(),
			uuid.Must(uuid.NewUUID()).String(),    // version 1: time and MAC based, predictable
			"0190f3a2-7b1c-7d4e-8f00-00000000000", // one digit short
		} {
			// The adapters parse (operations.ParseID) and name their own
			// field; what one that skipped it would pass is the zero ID.
			opID, perr := operations.ParseID(id)
			if perr == nil {
				t.Errorf("operation_id %q parsed", id)
			}
			if _, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, opID, printerTicket()); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("operation_id %q: err = %v, want ErrInvalid", id, err)
			}
		}
		if n := countOperations(t, d, tenantA) + countTickets(t, d, tenantA); n != 0 {
			t.Errorf("bad IDs wrote %d rows, want 0", n)
		}
		// Upper-case hex is the same UUID: accepted and found again in lower case.
		id := uuid.NewString()
		if _, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(strings.ToUpper(id)), printerTicket()); err != nil {
			t.Fatalf("upper-case operation_id: %v", err)
		}
		if st, err := svc.GetOperation(context.Background(), tenantA, ticketstest.OpID(id)); err != nil || st.Record.OperationID.String() != id {
			t.Errorf("lookup in lower case = %+v, %v", st, err)
		}
	})
}

func TestConcurrentDuplicatesMakeOneTicket(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		svc := newService(t, d)
		const callers = 32
		id := newID()
		results := make([]tickets.CreateResult, callers)
		errs := make([]error, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				results[i], errs[i] = svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
			})
		}
		wg.Wait()
		created := 0
		for i := range callers {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			if results[i].Ticket.ID != results[0].Ticket.ID || results[i].Ticket.Key != "SUP-1" {
				t.Errorf("caller %d got ticket %s (%s), caller 0 got %s", i, results[i].Ticket.ID, results[i].Ticket.Key, results[0].Ticket.ID)
			}
			if !results[i].Replayed {
				created++
			}
		}
		if created != 1 {
			t.Errorf("%d callers report creating the ticket, want exactly 1", created)
		}
		if n := countTickets(t, d, tenantA); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}

// TestConcurrentCreatesNumberContiguously: concurrent creates in one project
// get distinct numbers, and with none rolled back there is no gap either.
func TestConcurrentCreatesNumberContiguously(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		// SQLite's writers take turns, each within its write timeout: the
		// last of 64 waits for 63 others, longer on a loaded machine than
		// the default allows. This test is about numbering, not that bound.
		svc := tickets.NewService(d.Gorm, tickets.Options{Ledger: operations.Options{WriteTimeout: 5 * time.Minute}})
		ticketstest.SeedSupport(t, svc, tenantA, tenantB)
		const callers = 64
		keys := make([]string, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				in := printerTicket()
				in.Title = fmt.Sprintf("ticket %d", i)
				res, err := svc.CreateTicket(context.Background(), tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), in)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				keys[i] = res.Ticket.Key
			})
		}
		wg.Wait()
		slices.Sort(keys)
		want := make([]string, callers)
		for i := range callers {
			want[i] = fmt.Sprintf("SUP-%d", i+1)
		}
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Errorf("keys = %v, want SUP-1..SUP-%d exactly once each", keys, callers)
		}
	})
}

func TestTenantsAreIsolated(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		id := newID()
		a, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
		if err != nil {
			t.Fatal(err)
		}
		// The same ID under tenant B sees nothing of A's record...
		if _, err := svc.GetOperation(ctx, tenantB, ticketstest.OpID(id)); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("tenant B sees A's operation: %v", err)
		}
		if p, err := svc.PreviewTicket(ctx, tenantB, ticketstest.OpID(id), printerTicket()); err != nil || p.Would != tickets.WouldCreate {
			t.Errorf("tenant B preview = %+v, %v; want create", p, err)
		}
		if _, err := svc.GetTicket(ctx, tenantB, a.Ticket.ID.String()); !errors.Is(err, tickets.ErrNotFound) {
			t.Errorf("tenant B reads A's ticket by id: %v", err)
		}
		// ...and acts only for B, even with different input.
		other := printerTicket()
		other.Title = "B's own ticket"
		b, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantB, Subject: "bob"}, ticketstest.OpID(id), other)
		if err != nil || b.Replayed || b.Ticket.ID == a.Ticket.ID || b.Ticket.Title != "B's own ticket" {
			t.Fatalf("tenant B create = %+v, %v; want its own new ticket", b, err)
		}
		if got, err := svc.GetTicket(ctx, tenantA, "SUP-1"); err != nil || got.ID != a.Ticket.ID {
			t.Errorf("tenant A's SUP-1 = %+v, %v", got, err)
		}
		if got, err := svc.GetTicket(ctx, tenantB, "sup-1"); err != nil || got.ID != b.Ticket.ID {
			t.Errorf("tenant B's SUP-1 = %+v, %v", got, err)
		}
	})
}

func TestGetOperation(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		if _, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(newID())); !errors.Is(err, operations.ErrNotFound) {
			t.Errorf("unused ID: %v, want ErrNotFound", err)
		}
		// "garbage" does not parse: the zero ID is what reaches the service.
		garbage, _ := operations.ParseID("garbage")
		if _, err := svc.GetOperation(ctx, tenantA, garbage); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("malformed ID: %v, want ErrInvalid", err)
		}
		id := newID()
		res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
		if err != nil {
			t.Fatal(err)
		}
		st, err := svc.GetOperation(ctx, tenantA, ticketstest.OpID(id))
		if err != nil {
			t.Fatal(err)
		}
		if st.Record.Status != operations.StatusSucceeded || st.Record.ResultID != res.Ticket.ID.String() ||
			st.Ticket == nil || st.Ticket.Key != "SUP-1" || st.Record.Action != tickets.ActionCreateTicket {
			t.Errorf("status = %+v", st)
		}
	})
}

func TestPreviewTicketWritesNothing(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		id := newID()
		p, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(id), printerTicket())
		if err != nil || p.Would != tickets.WouldCreate || p.Fingerprint != tickets.Fingerprint(p.Ticket) {
			t.Fatalf("preview = %+v, %v", p, err)
		}
		if n := countOperations(t, d, tenantA) + countTickets(t, d, tenantA); n != 0 {
			t.Fatalf("preview wrote %d rows", n)
		}
		res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket())
		if err != nil {
			t.Fatal(err)
		}
		if p, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(id), printerTicket()); err != nil || p.Would != tickets.WouldReplay || p.ExistingTicketID != res.Ticket.ID.String() {
			t.Errorf("preview after create = %+v, %v; want replay", p, err)
		}
		other := printerTicket()
		other.Priority = "low"
		if p, err := svc.PreviewTicket(ctx, tenantA, ticketstest.OpID(id), other); err != nil || p.Would != tickets.WouldConflict {
			t.Errorf("preview with other input = %+v, %v; want conflict", p, err)
		}
		if p, err := svc.PreviewTicket(ctx, tenantA, operations.ID{}, other); err != nil || p.Would != "" || p.OperationID != nil {
			t.Errorf("preview without ID = %+v, %v", p, err)
		}
		if n := countTickets(t, d, tenantA); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
	})
}

func TestListTicketsPaginates(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		const total = 7
		for i := range total {
			in := printerTicket()
			in.Title = fmt.Sprintf("ticket %d", i)
			if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), in); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantB, Subject: "bob"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
			t.Fatal(err)
		}
		var keys []string
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > total {
				t.Fatal("pagination does not end")
			}
			page, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range page.Tickets {
				keys = append(keys, tk.Key)
			}
			if page.NextCursor == "" {
				break
			}
			cursor = page.NextCursor
		}
		want := []string{"SUP-7", "SUP-6", "SUP-5", "SUP-4", "SUP-3", "SUP-2", "SUP-1"}
		if !slices.Equal(keys, want) {
			t.Errorf("keys = %v, want %v (newest first, no gaps or repeats, tenant A only)", keys, want)
		}

		first, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range map[string]tickets.ListTicketsParams{
			"OtherTenant": {Limit: 2, Cursor: first.NextCursor},
			"OtherFilter": {Limit: 2, Cursor: first.NextCursor, Statuses: []tickets.Status{tickets.StatusClosed}},
			"OtherSort":   {Limit: 2, Cursor: first.NextCursor, Sort: tickets.SortPriorityDesc},
			"Forged":      {Limit: 2, Cursor: "eyJpZCI6IjAifQ.AAAAAAAAAAAAAAAAAAAAAA"},
		} {
			tenant := tenantA
			if name == "OtherTenant" {
				tenant = tenantB
			}
			if _, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenant}, p); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("%s cursor: err = %v, want ErrInvalid", name, err)
			}
		}
	})
}

func TestProjects(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: "support", Key: "HELP", Name: "Dup"}); !errors.Is(err, tickets.ErrExists) {
			t.Errorf("duplicate id: %v, want ErrExists", err)
		}
		if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: "Bad Id", Key: "1X", Name: ""}); !errors.Is(err, tickets.ErrInvalid) {
			t.Errorf("bad project: %v, want ErrInvalid", err)
		}
		p, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: " ops ", Key: "ops", Name: " Operations "})
		if err != nil || p.ID != "ops" || p.Key != "OPS" || p.Name != "Operations" {
			t.Fatalf("create = %+v, %v", p, err)
		}
		list, err := svc.ListProjects(ctx, tenantA)
		if err != nil || len(list) != 2 || list[0].ID != "ops" || list[1].ID != "support" {
			t.Errorf("list = %+v, %v", list, err)
		}
		if list, err := svc.ListProjects(ctx, "nobody"); err != nil || len(list) != 0 {
			t.Errorf("other tenant list = %+v, %v", list, err)
		}
	})
}

// TestPrunedRecordStillCannotDuplicate: the tickets table's own unique
// (tenant, operation_id) index backs the ledger, so pruning a record never
// turns a late retry into a second ticket; the retry is told honestly that
// the ID was applied long ago (ErrExpired), not that its input differs.
func TestPrunedRecordStillCannotDuplicate(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		id := newID()
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket()); err != nil {
			t.Fatal(err)
		}
		if err := d.Gorm.Exec("DELETE FROM operations").Error; err != nil {
			t.Fatal(err)
		}
		if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), printerTicket()); !errors.Is(err, operations.ErrExpired) {
			t.Errorf("retry after pruning: %v, want ErrExpired", err)
		}
		if n := countTickets(t, d, tenantA); n != 1 {
			t.Errorf("%d tickets, want 1", n)
		}
		// The refused retry rolled back; on PostgreSQL the number it took
		// from the project's sequence stays spent (docs/perf.md), so the next
		// ticket is SUP-3 there and SUP-2 on SQLite.
		next, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(newID()), printerTicket())
		if err != nil {
			t.Fatalf("a new ID after the refused retry: %v", err)
		}
		want := "SUP-3"
		if d.Dialect == db.SQLite {
			want = "SUP-2"
		}
		if next.Ticket.Key != want {
			t.Errorf("the create after the refused retry = %s, want %s", next.Ticket.Key, want)
		}
	})
}

func TestListOperations(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		svc := newService(t, d)
		var ids []string
		for i := range 5 {
			id := newID()
			in := printerTicket()
			in.Title = fmt.Sprintf("ticket %d", i)
			if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "alice"}, ticketstest.OpID(id), in); err != nil {
				t.Fatal(err)
			}
			ids = append([]string{id}, ids...) // newest first
		}
		var seen []string
		cursor := ""
		for range 6 {
			page, err := svc.ListOperations(ctx, tenantA, tickets.ListOperationsParams{Status: operations.StatusSucceeded, Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page.Operations {
				seen = append(seen, r.OperationID.String())
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(seen, ids) {
			t.Errorf("operations = %v, want %v (newest first, no gaps or repeats)", seen, ids)
		}
		first, err := svc.ListOperations(ctx, tenantA, tickets.ListOperationsParams{Limit: 2})
		if err != nil || first.NextCursor == "" {
			t.Fatalf("first page = %+v, %v", first, err)
		}
		for name, call := range map[string]func() error{
			"CursorOtherStatus": func() error {
				_, err := svc.ListOperations(ctx, tenantA, tickets.ListOperationsParams{Status: operations.StatusUnknown, Cursor: first.NextCursor})
				return err
			},
			"CursorOtherTenant": func() error {
				_, err := svc.ListOperations(ctx, tenantB, tickets.ListOperationsParams{Cursor: first.NextCursor})
				return err
			},
			"BadStatus": func() error {
				_, err := svc.ListOperations(ctx, tenantA, tickets.ListOperationsParams{Status: "done"})
				return err
			},
			"NULInProjectFilter": func() error {
				_, err := svc.ListTickets(ctx, tickets.Caller{Tenant: tenantA}, tickets.ListTicketsParams{ProjectID: "sup\x00port"})
				return err
			},
			"NULInReporter": func() error {
				_, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "ali\x00ce"}, ticketstest.OpID(newID()), printerTicket())
				return err
			},
		} {
			if err := call(); !errors.Is(err, tickets.ErrInvalid) {
				t.Errorf("%s: err = %v, want ErrInvalid", name, err)
			}
		}
		if other, err := svc.ListOperations(ctx, tenantB, tickets.ListOperationsParams{}); err != nil || len(other.Operations) != 0 {
			t.Errorf("tenant B sees %d operations (%v), want 0", len(other.Operations), err)
		}
	})
}
