-- +goose Up
-- The tenant's people (docs/contract.md#people): id is a token's subject.
-- An assignee must be one of them; every assignee already stored becomes an
-- active user, so no existing ticket's assignee stops being valid.
CREATE TABLE users (
    tenant_id    text        NOT NULL,
    id           text        NOT NULL CHECK (length(id) > 0),
    display_name text        NOT NULL DEFAULT '',
    email        text        NOT NULL DEFAULT '',
    active       integer     NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    created_at   datetime    NOT NULL,
    updated_at   datetime    NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
INSERT INTO users (tenant_id, id, created_at, updated_at)
SELECT DISTINCT tenant_id, assignee, strftime('%Y-%m-%d %H:%M:%f', 'now'), strftime('%Y-%m-%d %H:%M:%f', 'now')
FROM tickets WHERE assignee IS NOT NULL;

-- +goose Down
DROP TABLE users;
