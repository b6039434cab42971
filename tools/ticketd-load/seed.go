package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	// The pgx database/sql driver, registered as "pgx".
	_ "github.com/jackc/pgx/v5/stdlib"
)

// seedSpec says what seedTickets inserts.
type seedSpec struct {
	Tenant, Project, Key, Name string
	Tickets                    int64
}

// seedSQL inserts tickets and the operation records that created them in
// one statement, as ticketd's own create would have left them: per-project
// numbers drawn from the project's sequence (so creates running meanwhile
// never get the same number), keys KEY-N, UUIDv7 ticket IDs in
// creation order (one millisecond apart, ending just before now), UUIDv4
// operation IDs, and each record's fingerprint computed the way
// tickets.Fingerprint does (SHA-256 of the canonical JSON), so a replay of a
// seeded operation is answered like any other. The CTEs are MATERIALIZED
// so every random value is drawn once per row.
//
// $1 tenant, $2 project, $3 the project's sequence, $4 how many, $5 key prefix.
const seedSQL = `
WITH numbered AS MATERIALIZED (
    SELECT g, nextval($3::text::regclass) AS number
    FROM generate_series(1, $4::bigint) AS g
), base AS MATERIALIZED (
    SELECT number,
           date_trunc('milliseconds', now()) - ($4::bigint - g + 1) * interval '1 millisecond' AS ts,
           gen_random_uuid() AS op_id,
           uuid_send(gen_random_uuid()) AS r,
           'seeded ticket ' || number AS title
    FROM numbered
), src AS MATERIALIZED (
    SELECT number, ts, op_id, title,
           encode(set_byte(overlay(r PLACING substring(int8send((extract(epoch FROM ts) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
                           6, (get_byte(r, 6) & 15) | 112), 'hex')::uuid AS id
    FROM base
), t AS (
    INSERT INTO tickets (id, tenant_id, project_id, number, key, title, description, priority, status,
                         labels, reporter, operation_id, created_at, updated_at)
    SELECT id, $1, $2, number, $5 || '-' || number, title, '', 'normal', 'open',
           '["seed"]', 'seed', op_id, ts, ts
    FROM src
)
INSERT INTO operations (tenant_id, action, operation_id, fingerprint, status, result_id, created_at, updated_at)
SELECT $1, 'create_ticket', op_id,
       encode(sha256(convert_to('{"project_id":' || to_json($2::text)::text || ',"title":' || to_json(title)::text ||
                                ',"description":"","priority":"normal","labels":["seed"]}', 'UTF8')), 'hex'),
       'succeeded', id::text, ts, ts
FROM src`

// seedTickets adds spec.Tickets tickets to a migrated PostgreSQL database,
// creating the project if it is missing, in one transaction, then updates
// the planner's statistics so the first queries see the real table sizes.
func seedTickets(ctx context.Context, db *sql.DB, spec seedSpec) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("seed: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO projects (tenant_id, id, key, name, created_at)
		VALUES ($1, $2, $3, $4, now()) ON CONFLICT DO NOTHING`, spec.Tenant, spec.Project, spec.Key, spec.Name); err != nil {
		return fmt.Errorf("seed: project: %w", err)
	}
	var key, seq string
	if err := tx.QueryRowContext(ctx, `SELECT key, number_seq FROM projects WHERE tenant_id = $1 AND id = $2`,
		spec.Tenant, spec.Project).Scan(&key, &seq); err != nil {
		return fmt.Errorf("seed: read project: %w", err)
	}
	if _, err := tx.ExecContext(ctx, seedSQL, spec.Tenant, spec.Project, seq, spec.Tickets, key); err != nil {
		return fmt.Errorf("seed: insert tickets: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("seed: commit: %w", err)
	}
	if _, err := db.ExecContext(ctx, `ANALYZE projects, tickets, operations`); err != nil {
		return fmt.Errorf("seed: analyze: %w", err)
	}
	return nil
}

// runSeed is "ticketd-load seed": bulk-insert tickets into a migrated
// PostgreSQL database (run ticketd migrate first).
func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ticketd-load seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("database-url", "", "postgres:// URL of a migrated ticketd database (required)")
	spec := seedSpec{}
	fs.StringVar(&spec.Tenant, "tenant", devTenant, "tenant the tickets belong to")
	fs.StringVar(&spec.Project, "project", devProjectID, "project the tickets are filed in (created if missing)")
	fs.StringVar(&spec.Key, "key", devProjectKey, "key of the project, if it is created")
	fs.Int64Var(&spec.Tickets, "tickets", 10000, "how many tickets to add")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{msg: err.Error(), reported: true}
	}
	switch {
	case *url == "":
		return usageError{msg: "seed: -database-url is required"}
	case spec.Tickets < 1:
		return usageError{msg: "seed: -tickets must be at least 1"}
	case spec.Tenant == "" || spec.Project == "" || spec.Key == "":
		return usageError{msg: "seed: -tenant, -project and -key must not be empty"}
	}
	spec.Name = spec.Project
	db, err := sql.Open("pgx", *url)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	defer db.Close()
	start := time.Now()
	if err := seedTickets(ctx, db, spec); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "seeded %d tickets in %s/%s in %s\n", spec.Tickets, spec.Tenant, spec.Project, time.Since(start).Round(time.Millisecond))
	return err
}
