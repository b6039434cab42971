-- +goose Up
-- docs/approval.md: a person may decide over REST (decided_via 'rest'), and
-- any approver of the tenant sees its pending approvals, whoever asked, so
-- the pending index leads with the tenant alone.
ALTER TABLE approvals DROP CONSTRAINT approvals_decided_via_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_decided_via_check CHECK (decided_via IN ('form', 'url', 'console', 'rest'));
DROP INDEX approvals_pending;
CREATE INDEX approvals_pending ON approvals (tenant_id, created_at DESC) WHERE status = 'pending';

-- +goose Down
DROP INDEX approvals_pending;
CREATE INDEX approvals_pending ON approvals (tenant_id, requested_by, created_at DESC) WHERE status = 'pending';
UPDATE approvals SET decided_via = 'console' WHERE decided_via = 'rest';
ALTER TABLE approvals DROP CONSTRAINT approvals_decided_via_check;
ALTER TABLE approvals ADD CONSTRAINT approvals_decided_via_check CHECK (decided_via IN ('form', 'url', 'console'));
