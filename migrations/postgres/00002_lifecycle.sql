-- +goose Up
-- Milestone 2: tickets change after creation. Every change bumps version
-- (optimistic concurrency) and leaves an event in the ticket's history.
ALTER TABLE tickets ADD COLUMN version bigint NOT NULL DEFAULT 1 CHECK (version >= 1);
ALTER TABLE tickets ADD COLUMN assignee text CHECK (assignee <> '');

-- Full-text search over title and description. 'simple' lower-cases and
-- neither stems nor drops stop words, which is what SQLite's FTS5 unicode61
-- tokenizer does too. ASCII punctuation becomes space first: PostgreSQL's
-- parser would otherwise keep e-mail addresses, host names, paths and
-- version numbers as single tokens where FTS5 sees their words, and the
-- same query must find the same tickets on both engines.
ALTER TABLE tickets ADD COLUMN search tsvector
    GENERATED ALWAYS AS (to_tsvector('simple', translate(title || ' ' || description,
        '!"#$%&''()*+,-./:;<=>?@[\]^_`{|}~', '                                '))) STORED;
CREATE INDEX tickets_search ON tickets USING GIN (search);

-- The list filters, each newest first within the tenant.
CREATE INDEX tickets_tenant_assignee_id_desc ON tickets (tenant_id, assignee, id DESC) WHERE assignee IS NOT NULL;
CREATE INDEX tickets_tenant_priority_id_desc ON tickets (tenant_id, priority, id DESC);
-- Labels stay a JSON array in text (one encoding for both dialects); the
-- label filter asks labels::jsonb @> '["x"]', which this index serves.
CREATE INDEX tickets_labels ON tickets USING GIN ((labels::jsonb) jsonb_path_ops);

-- History: one row per write. seq orders a ticket's events (and comments):
-- it is allocated under the ticket's row lock, so it is commit order, which
-- neither clocks nor pre-allocated UUIDs guarantee across replicas.
CREATE TABLE comments (
    id           uuid        PRIMARY KEY,
    tenant_id    text        NOT NULL,
    ticket_id    uuid        NOT NULL REFERENCES tickets (id),
    seq          bigint      NOT NULL CHECK (seq >= 1),
    author       text        NOT NULL,
    body         text        NOT NULL CHECK (body <> ''),
    operation_id uuid        NOT NULL,
    created_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, ticket_id, seq)
);

CREATE TABLE ticket_events (
    id           uuid        PRIMARY KEY,
    tenant_id    text        NOT NULL,
    ticket_id    uuid        NOT NULL REFERENCES tickets (id),
    seq          bigint      NOT NULL CHECK (seq >= 1),
    version      bigint      NOT NULL CHECK (version >= 1),
    kind         text        NOT NULL CHECK (kind IN ('created', 'updated', 'commented')),
    actor        text        NOT NULL,
    operation_id uuid        NOT NULL,
    comment_id   uuid        REFERENCES comments (id),
    changes      text        NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, ticket_id, seq),
    CHECK ((kind = 'commented') = (comment_id IS NOT NULL))
);

-- Tickets created before history existed get their `created` event, so every
-- ticket's history starts at seq 1.
INSERT INTO ticket_events (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
SELECT gen_random_uuid(), tenant_id, id, 1, 1, 'created', reporter, operation_id, '{}', created_at
FROM tickets WHERE operation_id IS NOT NULL;

-- +goose Down
DROP TABLE ticket_events;
DROP TABLE comments;
DROP INDEX tickets_labels;
DROP INDEX tickets_tenant_priority_id_desc;
DROP INDEX tickets_tenant_assignee_id_desc;
DROP INDEX tickets_search;
ALTER TABLE tickets DROP COLUMN search;
ALTER TABLE tickets DROP COLUMN assignee;
ALTER TABLE tickets DROP COLUMN version;
