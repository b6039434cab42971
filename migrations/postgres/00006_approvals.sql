-- +goose Up
-- Milestone 3 (docs/contract.md#approval): a person's yes before a consequential write.
-- One row per time a person was asked about one intended write: the write is
-- named by the ledger's key and fingerprint, the person by the requesting
-- token's subject. approval_id is random and unguessable, because it is in
-- the URL a person opens.
CREATE TABLE approvals (
    approval_id  text        NOT NULL,
    tenant_id    text        NOT NULL,
    action       text        NOT NULL,
    operation_id uuid        NOT NULL,
    fingerprint  text        NOT NULL,
    requested_by text        NOT NULL,
    proposal     text        NOT NULL, -- JSON: what the write will change, as the person is shown it
    status       text        NOT NULL CHECK (status IN ('pending', 'approved', 'declined', 'used', 'expired')),
    decided_by   text,
    decided_via  text        CHECK (decided_via IN ('form', 'url', 'console')),
    created_at   timestamptz NOT NULL,
    decided_at   timestamptz,
    expires_at   timestamptz NOT NULL,
    -- When the requester was told of a decline: a decline is reported once,
    -- after which the same operation ID asks again.
    reported_at  timestamptz,
    CHECK ((status IN ('pending', 'expired')) OR (decided_by IS NOT NULL AND decided_at IS NOT NULL)),
    -- Led by the tenant like every key (docs/scale.md).
    PRIMARY KEY (tenant_id, approval_id)
);
CREATE INDEX approvals_request ON approvals (tenant_id, action, operation_id, requested_by, created_at DESC);
CREATE INDEX approvals_pending ON approvals (tenant_id, requested_by, created_at DESC) WHERE status = 'pending';

ALTER TABLE operations ADD COLUMN approval_id text;

-- A bulk update leaves one event per ticket under one operation ID; its
-- replay reads them back by that ID.
CREATE INDEX ticket_events_tenant_operation ON ticket_events (tenant_id, operation_id);

-- +goose Down
DROP INDEX ticket_events_tenant_operation;
ALTER TABLE operations DROP COLUMN approval_id;
DROP TABLE approvals;
