-- +goose Up
-- Sub-tasks (docs/contract.md#sub-tasks): a ticket's parent, a ticket of the
-- same tenant in any project; NULL for a top-level ticket. Cycles and the
-- depth bound are the service's checks (internal/subtasks); the index serves
-- a parent's children and list_tickets(parent=…).
ALTER TABLE tickets ADD COLUMN parent_id uuid;
ALTER TABLE tickets ADD CONSTRAINT tickets_parent_fk FOREIGN KEY (tenant_id, parent_id) REFERENCES tickets (tenant_id, id);
CREATE INDEX tickets_parent ON tickets (tenant_id, parent_id) WHERE parent_id IS NOT NULL;

-- +goose Down
DROP INDEX tickets_parent;
ALTER TABLE tickets DROP CONSTRAINT tickets_parent_fk;
ALTER TABLE tickets DROP COLUMN parent_id;
