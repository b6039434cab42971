package tickets_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// Run with: make bench (PostgreSQL and SQLite, -cpu 1,2). Each op is one
// CreateTicket call; creates/s = 1e9 / ns/op.
func BenchmarkCreateTicket(b *testing.B) {
	for name, open := range map[string]func(testing.TB) *db.DB{"postgres": dbtest.Postgres, "sqlite": dbtest.SQLite} {
		b.Run(name, func(b *testing.B) {
			svc := newService(b, open(b))
			ctx := context.Background()
			b.Run("New", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := svc.CreateTicket(ctx, tenantA, "bench", newID(), printerTicket()); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("NewParallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.CreateTicket(ctx, tenantA, "bench", newID(), printerTicket()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
			id := newID()
			if _, err := svc.CreateTicket(ctx, tenantA, "bench", id, printerTicket()); err != nil {
				b.Fatal(err)
			}
			b.Run("Replay", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if res, err := svc.CreateTicket(ctx, tenantA, "bench", id, printerTicket()); err != nil || !res.Replayed {
						b.Fatal(res, err)
					}
				}
			})
			b.Run("ReplayParallel", func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := svc.CreateTicket(ctx, tenantA, "bench", id, printerTicket()); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}
