package tickets_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tickets/ticketstest"
)

// Run with: make bench (PostgreSQL and SQLite, -cpu 1,2). Each op is one
// call; calls/s = 1e9 / ns/op.
func BenchmarkCreateTicket(b *testing.B) {
	for name, open := range map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite} {
		b.Run(name, func(b *testing.B) {
			svc := newService(b, open(b))
			ctx := context.Background()
			b.Run("New", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("NewParallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(newID()), printerTicket()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			id := newID()
			if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(id), printerTicket()); err != nil {
				b.Fatal(err)
			}
			b.Run("Replay", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(id), printerTicket()); err != nil || !res.Replayed {
						b.Fatal(res, err)
					}
				}
			})
			b.Run("ReplayParallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(id), printerTicket()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

// BenchmarkLifecycleWrites measures one UpdateTicket (a title change, so
// every call bumps the version), one AddComment, and the replay of each.
func BenchmarkLifecycleWrites(b *testing.B) {
	for name, open := range map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite} {
		b.Run(name, func(b *testing.B) {
			svc := newService(b, open(b))
			ctx := context.Background()
			tk := newTicket(b, svc, tenantA)
			i := 0
			b.Run("Update", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					i++
					title := fmt.Sprintf("title %d", i)
					if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(newID()), tk.Key, tickets.TicketUpdate{Title: &title}); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Comment", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(newID()), tk.Key, "Looked into it."); err != nil {
						b.Fatal(err)
					}
				}
			})
			updateID, commentID := newID(), newID()
			title := "replayed title"
			if _, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(updateID), tk.Key, tickets.TicketUpdate{Title: &title}); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(commentID), tk.Key, "Replayed."); err != nil {
				b.Fatal(err)
			}
			b.Run("UpdateReplay", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := svc.UpdateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(updateID), tk.Key, tickets.TicketUpdate{Title: &title}); err != nil || !res.Replayed {
						b.Fatal(res, err)
					}
				}
			})
			b.Run("CommentReplay", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := svc.AddComment(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(commentID), tk.Key, "Replayed."); err != nil || !res.Replayed {
						b.Fatal(res, err)
					}
				}
			})
		})
	}
}

// BenchmarkCreateTicketContention runs 8 creators per GOMAXPROCS (16 on 2
// cores), all in one project or spread over 16, on PostgreSQL. While numbers
// came from a row lock held until COMMIT, OneProject queued every create
// behind the previous one's commit; with a sequence per project the two
// should take the same time per call.
func BenchmarkCreateTicketContention(b *testing.B) {
	for _, projects := range []int{1, 16} {
		b.Run(fmt.Sprintf("Projects%d", projects), func(b *testing.B) {
			svc := newService(b, dbtest.Postgres(b))
			ctx := context.Background()
			ids := make([]string, projects)
			for i := range ids {
				ids[i] = fmt.Sprintf("p%02d", i)
				if _, err := svc.CreateProject(ctx, tenantA, tickets.Project{ID: ids[i], Key: fmt.Sprintf("P%02d", i), Name: ids[i]}); err != nil {
					b.Fatal(err)
				}
			}
			var next atomic.Int64
			b.SetParallelism(8)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				in := printerTicket()
				in.ProjectID = ids[int(next.Add(1))%projects]
				for pb.Next() {
					if _, err := svc.CreateTicket(ctx, tickets.Caller{Tenant: tenantA, Subject: "bench"}, ticketstest.OpID(newID()), in); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkListTickets is one ListTickets of 20 tickets, the page
// shared/bench's list_tickets asks for ({"limit":20}: the tenant's newest),
// over 40 stored, so a page also has a next cursor to encode. Compare
// allocs/op and B/op on a shared machine; ns/op on an idle one.
func BenchmarkListTickets(b *testing.B) {
	benchLists(b, printerTicket, func(b *testing.B, svc *tickets.Service, caller tickets.Caller) {
		b.ReportAllocs()
		for b.Loop() {
			page, err := svc.ListTickets(context.Background(), caller, tickets.ListTicketsParams{Limit: 20})
			if err != nil || len(page.Tickets) != 20 || page.NextCursor == "" {
				b.Fatal(len(page.Tickets), err)
			}
		}
	})
}

// BenchmarkListSummaries is BenchmarkListTickets' page over tickets with
// long descriptions (8,000 characters of words that do not compress), read
// whole and as a list for summaries reads it (WithoutDescriptions).
func BenchmarkListSummaries(b *testing.B) {
	words := rand.New(rand.NewPCG(1, 2))
	long := func() tickets.NewTicket {
		var s strings.Builder
		for s.Len() < 8000 {
			for range 1 + words.IntN(9) {
				s.WriteByte(byte('a' + words.IntN(26)))
			}
			s.WriteByte(' ')
		}
		t := printerTicket()
		t.Description = s.String()
		return t
	}
	benchLists(b, long, func(b *testing.B, svc *tickets.Service, caller tickets.Caller) {
		for _, without := range []bool{false, true} {
			b.Run(map[bool]string{false: "whole", true: "summaries"}[without], func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					page, err := svc.ListTickets(context.Background(), caller, tickets.ListTicketsParams{Limit: 20, WithoutDescriptions: without})
					if err != nil || len(page.Tickets) != 20 || (page.Tickets[0].Description == "") != without {
						b.Fatal(len(page.Tickets), err)
					}
				}
			})
		}
	})
}

// benchLists runs bench on each dialect against a service holding 40 of
// newTicket's tickets in one tenant, with the caller to list them as.
func benchLists(b *testing.B, newTicket func() tickets.NewTicket, bench func(*testing.B, *tickets.Service, tickets.Caller)) {
	for name, open := range map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite} {
		b.Run(name, func(b *testing.B) {
			svc := newService(b, open(b))
			caller := tickets.Caller{Tenant: tenantA, Subject: "bench"}
			for range 40 {
				if _, err := svc.CreateTicket(context.Background(), caller, ticketstest.OpID(newID()), newTicket()); err != nil {
					b.Fatal(err)
				}
			}
			bench(b, svc, caller)
		})
	}
}
