-- +goose Up
-- Links between tickets (docs/contract.md#links): one row per link, stored in
-- one direction (blocks, duplicates; relates_to from the smaller ID), each end
-- reading the other's kind as the inverse. Same tenant, any project.
CREATE TABLE ticket_links (
    tenant_id    text        NOT NULL,
    source_id    text        NOT NULL REFERENCES tickets (id),
    target_id    text        NOT NULL REFERENCES tickets (id),
    kind         text        NOT NULL CHECK (kind IN ('blocks', 'relates_to', 'duplicates')),
    operation_id text        NOT NULL,
    created_at   datetime    NOT NULL,
    PRIMARY KEY (tenant_id, source_id, target_id, kind),
    CHECK (source_id <> target_id)
);
CREATE INDEX ticket_links_target ON ticket_links (tenant_id, target_id);

-- A link change leaves a linked or unlinked event in each end's history.
-- SQLite cannot alter a CHECK: the table is rebuilt with the wider one,
-- its rows, keys and indexes as they were.
CREATE TABLE ticket_events_linked (
    id           text        NOT NULL PRIMARY KEY,
    tenant_id    text        NOT NULL,
    ticket_id    text        NOT NULL REFERENCES tickets (id),
    seq          integer     NOT NULL CHECK (seq >= 1),
    version      integer     NOT NULL CHECK (version >= 1),
    kind         text        NOT NULL CHECK (kind IN ('created', 'updated', 'commented', 'linked', 'unlinked')),
    actor        text        NOT NULL,
    operation_id text        NOT NULL,
    comment_id   text        REFERENCES comments (id),
    changes      text        NOT NULL DEFAULT '{}',
    created_at   datetime    NOT NULL,
    reapplied_after_prune integer NOT NULL DEFAULT 0,
    UNIQUE (tenant_id, ticket_id, seq),
    CHECK ((kind = 'commented') = (comment_id IS NOT NULL))
);
INSERT INTO ticket_events_linked (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes,
    created_at, reapplied_after_prune)
SELECT id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes, created_at, reapplied_after_prune
FROM ticket_events;
DROP TABLE ticket_events;
ALTER TABLE ticket_events_linked RENAME TO ticket_events;
CREATE UNIQUE INDEX ticket_events_tenant_kind_operation ON ticket_events (tenant_id, kind, operation_id, ticket_id)
    WHERE reapplied_after_prune = 0;
CREATE INDEX ticket_events_tenant_operation ON ticket_events (tenant_id, operation_id);
CREATE UNIQUE INDEX ticket_events_tenant_id_key ON ticket_events (tenant_id, id);

-- +goose Down
CREATE TABLE ticket_events_unlinked (
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
    reapplied_after_prune integer NOT NULL DEFAULT 0,
    UNIQUE (tenant_id, ticket_id, seq),
    CHECK ((kind = 'commented') = (comment_id IS NOT NULL))
);
INSERT INTO ticket_events_unlinked (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes,
    created_at, reapplied_after_prune)
SELECT id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, comment_id, changes, created_at, reapplied_after_prune
FROM ticket_events WHERE kind NOT IN ('linked', 'unlinked');
DROP TABLE ticket_events;
ALTER TABLE ticket_events_unlinked RENAME TO ticket_events;
CREATE UNIQUE INDEX ticket_events_tenant_kind_operation ON ticket_events (tenant_id, kind, operation_id, ticket_id)
    WHERE reapplied_after_prune = 0;
CREATE INDEX ticket_events_tenant_operation ON ticket_events (tenant_id, operation_id);
CREATE UNIQUE INDEX ticket_events_tenant_id_key ON ticket_events (tenant_id, id);
DROP TABLE ticket_links;
