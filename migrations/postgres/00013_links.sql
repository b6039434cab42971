-- +goose Up
-- Links between tickets (docs/contract.md#links): one row per link, stored in
-- one direction (blocks, duplicates; relates_to from the smaller ID), each end
-- reading the other's kind as the inverse. Same tenant, any project: both ends
-- are the tenant's tickets, tenant first like every key (docs/scale.md).
CREATE TABLE ticket_links (
    tenant_id    text        NOT NULL,
    source_id    uuid        NOT NULL,
    target_id    uuid        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('blocks', 'relates_to', 'duplicates')),
    operation_id uuid        NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, source_id, target_id, kind),
    FOREIGN KEY (tenant_id, source_id) REFERENCES tickets (tenant_id, id),
    FOREIGN KEY (tenant_id, target_id) REFERENCES tickets (tenant_id, id),
    CHECK (source_id <> target_id)
);
-- A ticket's links are read from both ends.
CREATE INDEX ticket_links_target ON ticket_links (tenant_id, target_id);

-- A link change leaves a linked or unlinked event in each end's history.
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_kind_check;
ALTER TABLE ticket_events ADD CONSTRAINT ticket_events_kind_check
    CHECK (kind IN ('created', 'updated', 'commented', 'linked', 'unlinked'));

-- +goose Down
DELETE FROM ticket_events WHERE kind IN ('linked', 'unlinked');
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_kind_check;
ALTER TABLE ticket_events ADD CONSTRAINT ticket_events_kind_check CHECK (kind IN ('created', 'updated', 'commented'));
DROP TABLE ticket_links;
