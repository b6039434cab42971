-- +goose Up
-- Tracker-backed projects (docs/contract.md#tracker-backed-projects): their tickets live in an external
-- issue tracker. The token is never stored: backend_token_env names the
-- environment variable that holds it.
ALTER TABLE projects ADD COLUMN backend_kind text CHECK (backend_kind IN ('github'));
ALTER TABLE projects ADD COLUMN backend_repository text;
ALTER TABLE projects ADD COLUMN backend_api_url text;
ALTER TABLE projects ADD COLUMN backend_token_env text;

-- The local row of a tracker-backed ticket mirrors its issue.
ALTER TABLE tickets ADD COLUMN external_id text;
ALTER TABLE tickets ADD COLUMN external_url text;

-- What an operation asked of a tracker and what is known of it: claimed
-- (pending) and committed before anything is sent, so a crash leaves a
-- visible record. attempts counts requests that may have reached the
-- tracker (counted before sending); leased_until keeps a second worker from
-- reconciling or sending at the same moment.
CREATE TABLE operation_downstream (
    tenant_id     text        NOT NULL,
    action        text        NOT NULL,
    operation_id  uuid        NOT NULL,
    system        text        NOT NULL,
    project_id    text        NOT NULL,
    ticket_id     uuid        NOT NULL,
    request       text        NOT NULL, -- JSON: what to send, so any replica can send it again
    status        text        NOT NULL CHECK (status IN ('pending', 'succeeded', 'unknown', 'failed')),
    external_id   text,
    external_url  text,
    attempts      integer     NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    last_error    text,
    last_sent_at  timestamptz,
    next_check_at timestamptz,
    leased_until  timestamptz,
    duplicates    text        NOT NULL DEFAULT '[]', -- JSON: duplicates found and closed
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, action, operation_id),
    FOREIGN KEY (tenant_id, action, operation_id) REFERENCES operations (tenant_id, action, operation_id) ON DELETE CASCADE
);

-- An operation's history of reconciliation: every send, every look at the
-- tracker, every duplicate closed, every operator's finding (who, when, why).
CREATE TABLE operation_history (
    tenant_id    text        NOT NULL,
    id           uuid        NOT NULL,
    action       text        NOT NULL,
    operation_id uuid        NOT NULL,
    kind         text        NOT NULL,
    actor        text        NOT NULL,
    detail       text        NOT NULL DEFAULT '',
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, action, operation_id) REFERENCES operations (tenant_id, action, operation_id) ON DELETE CASCADE
);

CREATE INDEX operation_history_operation ON operation_history (tenant_id, action, operation_id, id);

-- +goose Down
DROP TABLE operation_history;
DROP TABLE operation_downstream;
ALTER TABLE tickets DROP COLUMN external_url;
ALTER TABLE tickets DROP COLUMN external_id;
ALTER TABLE projects DROP COLUMN backend_token_env;
ALTER TABLE projects DROP COLUMN backend_api_url;
ALTER TABLE projects DROP COLUMN backend_repository;
ALTER TABLE projects DROP COLUMN backend_kind;
