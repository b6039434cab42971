-- +goose Up
-- A tombstone per pruned operation record (docs/contract.md#the-retry-contract):
-- ticketd prune writes it in the transaction that deletes the record, so a
-- write that ran stays answerable after its record is gone. A lookup answers
-- status expired, a retry operation_expired, and the ledger never claims the
-- key again. Kept for good: a few dozen bytes each. The fingerprint is the
-- pruned record's, so a retry can be told whether it brought the same input.
-- Tenant first, like every key (docs/scale.md).
CREATE TABLE operation_tombstones (
    tenant_id    text        NOT NULL,
    action       text        NOT NULL,
    operation_id uuid        NOT NULL,
    fingerprint  text        NOT NULL CHECK (length(fingerprint) = 64),
    pruned_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, operation_id, action) -- tenant first (docs/scale.md), then the ID, which Find reads alone
);

-- +goose Down
DROP TABLE operation_tombstones;
