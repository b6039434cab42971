-- +goose Up
-- docs/contract.md#lists-and-the-context-budget's list controls: the updated_desc order (a search's default)
-- and updated_since read this index in order instead of sorting every
-- ticket of the tenant; the unassigned filter ("needs attention") has a
-- partial index of its own, as assigned tickets have
-- tickets_tenant_assignee_id_desc.
CREATE INDEX tickets_tenant_updated_desc ON tickets (tenant_id, updated_at DESC, id DESC);
CREATE INDEX tickets_tenant_unassigned_id_desc ON tickets (tenant_id, id DESC) WHERE assignee IS NULL;


-- +goose Down
DROP INDEX tickets_tenant_unassigned_id_desc;
DROP INDEX tickets_tenant_updated_desc;
