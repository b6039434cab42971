-- +goose Up
CREATE TABLE projects (
    tenant_id   text        NOT NULL,
    id          text        NOT NULL,
    key         text        NOT NULL,
    name        text        NOT NULL,
    next_number bigint      NOT NULL DEFAULT 1 CHECK (next_number >= 1),
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, key)
);

CREATE TABLE tickets (
    id           uuid        PRIMARY KEY,
    tenant_id    text        NOT NULL,
    project_id   text        NOT NULL,
    number       bigint      NOT NULL CHECK (number >= 1),
    key          text        NOT NULL,
    title        text        NOT NULL,
    description  text        NOT NULL DEFAULT '',
    priority     text        NOT NULL CHECK (priority IN ('low', 'normal', 'high', 'urgent')),
    status       text        NOT NULL CHECK (status IN ('open', 'in_progress', 'resolved', 'closed')),
    labels       text        NOT NULL DEFAULT '[]',
    reporter     text        NOT NULL,
    operation_id uuid,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    UNIQUE (tenant_id, project_id, number),
    UNIQUE (tenant_id, key),
    FOREIGN KEY (tenant_id, project_id) REFERENCES projects (tenant_id, id)
);

-- Lists are newest first per tenant; ids are UUIDv7, so id order is creation order.
CREATE INDEX tickets_tenant_id_desc ON tickets (tenant_id, id DESC);
CREATE INDEX tickets_tenant_project_id_desc ON tickets (tenant_id, project_id, id DESC);

-- A second line of defence behind the ledger: even if an operation record is
-- pruned, the same operation can never create a second ticket.
CREATE UNIQUE INDEX tickets_tenant_operation ON tickets (tenant_id, operation_id) WHERE operation_id IS NOT NULL;

CREATE TABLE operations (
    tenant_id    text        NOT NULL,
    action       text        NOT NULL,
    operation_id uuid        NOT NULL,
    fingerprint  text        NOT NULL CHECK (length(fingerprint) = 64),
    status       text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed', 'unknown')),
    result_id    text,
    error        text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, action, operation_id)
);

CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, action DESC, operation_id DESC);

-- +goose Down
DROP TABLE operations;
DROP TABLE tickets;
DROP TABLE projects;
