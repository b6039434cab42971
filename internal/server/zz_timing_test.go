package server_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tickets"
)

func TestZZTiming(t *testing.T) {
	d := dbtest.SQLite(t)
	svc := tickets.NewService(d.Gorm, tickets.Options{})
	v, err := authn.NewVerifier(context.Background(), authn.Config{Issuer: "i", Audience: "http://x/mcp", HS256Secret: []byte("servertest-secret-of-at-least-32-bytes!")})
	if err != nil {
		t.Fatal(err)
	}
	var ds []time.Duration
	for i := 0; i < 60; i++ {
		metrics := observe.New(observe.Options{Actions: tickets.Actions()})
		t0 := time.Now()
		if _, err := server.New(server.Config{Service: svc, Verifier: v, PublicURL: "http://x", Issuer: "i", Metrics: metrics, Ready: func(context.Context) error { return nil }}); err != nil {
			t.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	t.Logf("server.New first %v median %v min %v", ds, ds[len(ds)/2], ds[0])
}
