-- +goose Up
-- docs/approval.md: a person may decide over REST (decided_via 'rest'), and
-- any approver of the tenant sees its pending approvals, whoever asked, so
-- the pending index leads with the tenant alone. SQLite cannot change a
-- CHECK in place: the table is rebuilt with its rows.
CREATE TABLE approvals_new (
    approval_id  text        NOT NULL,
    tenant_id    text        NOT NULL,
    action       text        NOT NULL,
    operation_id text        NOT NULL,
    fingerprint  text        NOT NULL,
    requested_by text        NOT NULL,
    proposal     text        NOT NULL, -- JSON: what the write will change, as the person is shown it
    status       text        NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'used', 'expired')),
    decided_by   text,
    decided_via  text        CHECK (decided_via IN ('form', 'url', 'console', 'rest')),
    created_at   datetime    NOT NULL,
    decided_at   datetime,
    expires_at   datetime    NOT NULL,
    -- When the requester was told of a decline: a decline is reported once,
    -- after which the same operation ID asks again.
    reported_at  datetime,
    CHECK ((status IN ('pending', 'expired')) OR (decided_by IS NOT NULL AND decided_at IS NOT NULL)),
    -- Led by the tenant like every key (docs/scale.md).
    PRIMARY KEY (tenant_id, approval_id)
);
INSERT INTO approvals_new (approval_id, tenant_id, action, operation_id, fingerprint, requested_by, proposal, status, decided_by, decided_via, created_at, decided_at, expires_at, reported_at) SELECT approval_id, tenant_id, action, operation_id, fingerprint, requested_by, proposal, status, decided_by, decided_via, created_at, decided_at, expires_at, reported_at FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_new RENAME TO approvals;
CREATE INDEX approvals_request ON approvals (tenant_id, action, operation_id, requested_by, created_at DESC);
CREATE INDEX approvals_pending ON approvals (tenant_id, created_at DESC) WHERE status = 'pending';

-- +goose Down
CREATE TABLE approvals_old (
    approval_id  text        NOT NULL,
    tenant_id    text        NOT NULL,
    action       text        NOT NULL,
    operation_id text        NOT NULL,
    fingerprint  text        NOT NULL,
    requested_by text        NOT NULL,
    proposal     text        NOT NULL, -- JSON: what the write will change, as the person is shown it
    status       text        NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'used', 'expired')),
    decided_by   text,
    decided_via  text        CHECK (decided_via IN ('form', 'url', 'console')),
    created_at   datetime    NOT NULL,
    decided_at   datetime,
    expires_at   datetime    NOT NULL,
    -- When the requester was told of a decline: a decline is reported once,
    -- after which the same operation ID asks again.
    reported_at  datetime,
    CHECK ((status IN ('pending', 'expired')) OR (decided_by IS NOT NULL AND decided_at IS NOT NULL)),
    -- Led by the tenant like every key (docs/scale.md).
    PRIMARY KEY (tenant_id, approval_id)
);
INSERT INTO approvals_old (approval_id, tenant_id, action, operation_id, fingerprint, requested_by, proposal, status, decided_by, decided_via, created_at, decided_at, expires_at, reported_at)
    SELECT approval_id, tenant_id, action, operation_id, fingerprint, requested_by, proposal, status, decided_by, CASE decided_via WHEN 'rest' THEN 'console' ELSE decided_via END, created_at, decided_at, expires_at, reported_at FROM approvals;
DROP TABLE approvals;
ALTER TABLE approvals_old RENAME TO approvals;
CREATE INDEX approvals_request ON approvals (tenant_id, action, operation_id, requested_by, created_at DESC);
CREATE INDEX approvals_pending ON approvals (tenant_id, requested_by, created_at DESC) WHERE status = 'pending';
