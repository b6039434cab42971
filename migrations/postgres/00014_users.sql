-- +goose Up
-- The tenant's people (docs/contract.md#people): id is a token's subject.
-- An assignee must be one of them; every assignee already stored becomes an
-- active user, so no existing ticket's assignee stops being valid.
CREATE TABLE users (
    tenant_id    text        NOT NULL,
    id           text        NOT NULL CHECK (length(id) > 0),
    display_name text        NOT NULL DEFAULT '',
    email        text        NOT NULL DEFAULT '',
    active       boolean     NOT NULL DEFAULT true,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
INSERT INTO users (tenant_id, id, created_at, updated_at)
SELECT DISTINCT tenant_id, assignee, now(), now() FROM tickets WHERE assignee IS NOT NULL;

-- +goose Down
DROP TABLE users;
