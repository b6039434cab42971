-- +goose Up
-- Milestone 2: tickets change after creation. Every change bumps version
-- (optimistic concurrency) and leaves an event in the ticket's history.
ALTER TABLE tickets ADD COLUMN version integer NOT NULL DEFAULT 1 CHECK (version >= 1);
ALTER TABLE tickets ADD COLUMN assignee text CHECK (assignee <> '');

-- The list filters, each newest first within the tenant. The label filter
-- reads the JSON array with json_each within the tenant's rows; SQLite has
-- no index over array elements.
CREATE INDEX tickets_tenant_assignee_id_desc ON tickets (tenant_id, assignee, id DESC) WHERE assignee IS NOT NULL;
CREATE INDEX tickets_tenant_priority_id_desc ON tickets (tenant_id, priority, id DESC);

-- Full-text search over title and description, an external-content FTS5
-- index kept in step by triggers, in the writing transaction. unicode61
-- without diacritic removal matches PostgreSQL's 'simple' configuration:
-- lower-cased words, no stemming, no stop words. It is keyed by the tickets'
-- rowid; should a VACUUM ever renumber rowids, rebuild it with
-- INSERT INTO tickets_fts(tickets_fts) VALUES ('rebuild').
CREATE VIRTUAL TABLE tickets_fts USING fts5(
    title, description, content = 'tickets', tokenize = 'unicode61 remove_diacritics 0'
);
INSERT INTO tickets_fts (tickets_fts) VALUES ('rebuild');

-- +goose StatementBegin
CREATE TRIGGER tickets_fts_insert AFTER INSERT ON tickets BEGIN
    INSERT INTO tickets_fts (rowid, title, description) VALUES (new.rowid, new.title, new.description);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tickets_fts_update AFTER UPDATE OF title, description ON tickets BEGIN
    INSERT INTO tickets_fts (tickets_fts, rowid, title, description) VALUES ('delete', old.rowid, old.title, old.description);
    INSERT INTO tickets_fts (rowid, title, description) VALUES (new.rowid, new.title, new.description);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER tickets_fts_delete AFTER DELETE ON tickets BEGIN
    INSERT INTO tickets_fts (tickets_fts, rowid, title, description) VALUES ('delete', old.rowid, old.title, old.description);
END;
-- +goose StatementEnd

-- History: one row per write. seq orders a ticket's events (and comments):
-- it is allocated while the ticket's writers are serialised, so it is commit
-- order, which neither clocks nor pre-allocated UUIDs guarantee.
CREATE TABLE comments (
    id           text        NOT NULL PRIMARY KEY,
    tenant_id    text        NOT NULL,
    ticket_id    text        NOT NULL REFERENCES tickets (id),
    seq          integer     NOT NULL CHECK (seq >= 1),
    author       text        NOT NULL,
    body         text        NOT NULL CHECK (body <> ''),
    operation_id text        NOT NULL,
    created_at   datetime    NOT NULL,
    UNIQUE (tenant_id, ticket_id, seq)
);

CREATE TABLE ticket_events (
    id           text        NOT NULL PRIMARY KEY,
    tenant_id    text        NOT NULL,
    ticket_id    text        NOT NULL REFERENCES tickets (id),
    seq          integer     NOT NULL CHECK (seq >= 1),
    version      integer     NOT NULL CHECK (version >= 1),
    kind         text        NOT NULL CHECK (kind IN ('created', 'updated', 'commented')),
    actor        text        NOT NULL,
    operation_id text        NOT NULL,
    comment_id   text        REFERENCES comments (id),
    changes      text        NOT NULL DEFAULT '{}',
    created_at   datetime    NOT NULL,
    UNIQUE (tenant_id, ticket_id, seq),
    CHECK ((kind = 'commented') = (comment_id IS NOT NULL))
);

-- Tickets created before history existed get their `created` event, so every
-- ticket's history starts at seq 1. The event IDs are random (version 4) UUIDs.
INSERT INTO ticket_events (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-' ||
             substr('89ab', 1 + abs(random() % 4), 1) || substr(h, 18, 3) || '-' || substr(h, 21, 12)),
       tenant_id, id, 1, 1, 'created', reporter, operation_id, '{}', created_at
FROM (SELECT hex(randomblob(16)) AS h, tenant_id, id, reporter, operation_id, created_at
      FROM tickets WHERE operation_id IS NOT NULL);

-- +goose Down
DROP TABLE ticket_events;
DROP TABLE comments;
DROP TRIGGER tickets_fts_delete;
DROP TRIGGER tickets_fts_update;
DROP TRIGGER tickets_fts_insert;
DROP TABLE tickets_fts;
DROP INDEX tickets_tenant_priority_id_desc;
DROP INDEX tickets_tenant_assignee_id_desc;
ALTER TABLE tickets DROP COLUMN assignee;
ALTER TABLE tickets DROP COLUMN version;
