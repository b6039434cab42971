package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/limits"
	"github.com/ticketd/ticketd/internal/server"
)

// edge parses and checks the edge settings, so a bad value stops start-up
// with a message naming the variable, before the database is opened.
func (c *config) edge() (server.Edge, error) {
	e := server.Edge{
		AllowedOrigins: commaList(c.AllowedOrigins),
		AllowedHosts:   commaList(c.AllowedHosts),
		ReadOnly:       c.ReadOnly,
	}
	var err error
	if e.Limits.WritesPerSecond, err = rate("TICKETD_RATE_LIMIT_WRITES", c.RateLimitWrites); err != nil {
		return server.Edge{}, err
	}
	if e.Limits.ReadsPerSecond, err = rate("TICKETD_RATE_LIMIT_READS", c.RateLimitReads); err != nil {
		return server.Edge{}, err
	}
	if e.Limits.Burst, err = count("TICKETD_RATE_LIMIT_BURST", c.RateLimitBurst); err != nil {
		return server.Edge{}, err
	}
	// The cap sits below the database pool, so one tenant cannot hold
	// every connection (docs/contract.md#fair-share): derived from it unless set, and
	// refused at or above it. limits reads a negative cap as none.
	dialect, _, err := db.ParseURL(c.DatabaseURL)
	if err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_DATABASE_URL: %w", err)
	}
	e.PoolSize = db.PoolSize(dialect)
	e.Limits.Concurrency = limits.ConcurrencyFor(e.PoolSize)
	if strings.TrimSpace(c.TenantConcurrency) != "" {
		concurrency, err := count("TICKETD_TENANT_CONCURRENCY", c.TenantConcurrency)
		if err != nil {
			return server.Edge{}, err
		}
		e.Limits.Concurrency = concurrency
		if concurrency == 0 {
			e.Limits.Concurrency = -1
		}
	}
	if err := limits.CheckConcurrency(e.Limits.Concurrency, e.PoolSize); err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_TENANT_CONCURRENCY=%q with a %s pool of %d connections: %w", c.TenantConcurrency, dialect, e.PoolSize, err)
	}
	if _, err := limits.New(e.Limits); err != nil {
		return server.Edge{}, fmt.Errorf("tenant limits: %w", err)
	}
	if _, err := server.Origin(server.OriginOptions{PublicURL: c.PublicURL, AllowedOrigins: e.AllowedOrigins, AllowedHosts: e.AllowedHosts}); err != nil {
		return server.Edge{}, fmt.Errorf("TICKETD_ALLOWED_ORIGINS / TICKETD_ALLOWED_HOSTS: %w", err)
	}
	return e, nil
}

// commaList splits a comma-separated setting, dropping blanks.
func commaList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func rate(name, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f < 0 || f != f || f > 1e9 {
		return 0, fmt.Errorf("%s=%q: want a number of requests per second, 0 or more (0 turns the limit off)", name, v)
	}
	return f, nil
}

func count(name, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: want a whole number, 0 or more", name, v)
	}
	return n, nil
}
