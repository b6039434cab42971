package main

import (
	"fmt"
	"strconv"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/server"
)

// edge checks the edge settings the table decoded against each other and
// the database pool, and returns them as server.Edge, so a bad value stops
// start-up with a message naming the variable, before the database is
// opened.
func (c *config) edge() (server.Edge, error) {
	e := server.Edge{
		AllowedOrigins: c.AllowedOrigins,
		AllowedHosts:   c.AllowedHosts,
		Limits:         c.Limits,
		WorkSlots:      c.WorkSlots,
		ReadOnly:       c.ReadOnly,
	}
	// The cap sits below the database pool, so one tenant cannot hold
	// every connection (docs/contract.md#fair-share): derived from it unless set, and
	// refused at or above it.
	dialect, _, err := db.ParseURL(c.DatabaseURL)
	if err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
	}
	e.PoolSize = db.PoolSize(dialect)
	if e.Limits.Concurrency == 0 {
		e.Limits.Concurrency = limits.ConcurrencyFor(e.PoolSize)
	}
	if err := limits.CheckConcurrency(e.Limits.Concurrency, e.PoolSize); err != nil {
		// As set: no cap (a negative one) was set as 0.
		set := strconv.Itoa(max(e.Limits.Concurrency, 0))
		return server.Edge{}, fmt.Errorf("TICKETD_TENANT_CONCURRENCY=%q with a %s pool of %d connections: %w", set, dialect, e.PoolSize, err)
	}
	if _, err := limits.New(e.Limits); err != nil {
		return server.Edge{}, fmt.Errorf("tenant limits: %w", err)
	}
	if _, err := server.Origin(server.OriginOptions{PublicURL: c.PublicURL, AllowedOrigins: e.AllowedOrigins, AllowedHosts: e.AllowedHosts}); err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_ALLOWED_ORIGINS / TICKETD_ALLOWED_HOSTS: %w", err)
	}
	return e, nil
}
