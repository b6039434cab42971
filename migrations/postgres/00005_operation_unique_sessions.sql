-- +goose Up
-- Every write's own row keeps its operation ID unique per tenant, as tickets
-- already do (tickets_tenant_operation), so a retry that arrives after its
-- operation record was pruned (ticketd prune) is refused instead of applied a
-- second time: a comment has one row per add_comment; a ticket's history has
-- one event of each kind per operation and ticket (a bulk update leaves one
-- per ticket it changes; an ID may serve one create, one
-- update and one comment, since the ledger's key includes the action).
--
-- Rows that already are such a second application (a retry after an early
-- prune, before this index existed) are kept, as history, and marked
-- reapplied_after_prune; the index covers every other row, so nothing can
-- be applied a third time and the upgrade never fails on old data.
SET LOCAL statement_timeout = 0; -- ticketd's own 20s bound is for serving, not for building indexes

ALTER TABLE comments ADD COLUMN reapplied_after_prune boolean NOT NULL DEFAULT false;
ALTER TABLE ticket_events ADD COLUMN reapplied_after_prune boolean NOT NULL DEFAULT false;

UPDATE comments SET reapplied_after_prune = true WHERE id IN (
    SELECT id FROM (
        SELECT id, row_number() OVER (PARTITION BY tenant_id, operation_id ORDER BY created_at, seq, id) AS n
        FROM comments
    ) ranked WHERE n > 1
);
UPDATE ticket_events SET reapplied_after_prune = true WHERE id IN (
    SELECT id FROM (
        SELECT id, row_number() OVER (PARTITION BY tenant_id, kind, operation_id, ticket_id ORDER BY created_at, seq, id) AS n
        FROM ticket_events
    ) ranked WHERE n > 1
);

CREATE UNIQUE INDEX comments_tenant_operation ON comments (tenant_id, operation_id)
    WHERE NOT reapplied_after_prune;
CREATE UNIQUE INDEX ticket_events_tenant_kind_operation ON ticket_events (tenant_id, kind, operation_id, ticket_id)
    WHERE NOT reapplied_after_prune;

-- Console sessions of their own (docs/contract.md#fair-share): the console's cookie holds a
-- random secret whose SHA-256 is id (after the tenant, which leads every key),
-- never the bearer token it signed in
-- with, so the cookie is useless on /mcp and /api, and sign-out deletes the
-- row, which ends the session on every replica at once.
CREATE TABLE console_sessions (
    tenant_id  text        NOT NULL,
    id         text        NOT NULL,    -- hex SHA-256 of the cookie's secret
    subject    text        NOT NULL,
    scopes     text        NOT NULL,    -- JSON array, as the token granted them
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)            -- tenant first, like every key (docs/scale.md)
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);

-- +goose Down
DROP TABLE console_sessions;
DROP INDEX ticket_events_tenant_kind_operation;
DROP INDEX comments_tenant_operation;
ALTER TABLE ticket_events DROP COLUMN reapplied_after_prune;
ALTER TABLE comments DROP COLUMN reapplied_after_prune;
