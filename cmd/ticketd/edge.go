package main

import (
	"fmt"

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
		AdmissionWait:  c.AdmissionWait,
		TenantQueue:    c.TenantQueue,
		ReadOnly:       c.ReadOnly,
		Toolsets:       c.Toolsets,
	}
	// The work slots sit below the database pool (limits.WorkSlotsFor).
	dialect, _, err := db.ParseURL(c.DatabaseURL)
	if err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
	}
	e.PoolSize = db.PoolSize(dialect)
	if _, err := limits.New(e.Limits); err != nil {
		return server.Edge{}, fmt.Errorf("tenant limits: %w", err)
	}
	if _, err := server.Origin(server.OriginOptions{PublicURL: c.PublicURL, AllowedOrigins: e.AllowedOrigins, AllowedHosts: e.AllowedHosts}); err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_ALLOWED_ORIGINS / TICKETD_ALLOWED_HOSTS: %w", err)
	}
	return e, nil
}
