-- +goose Up
-- Sub-tasks (docs/contract.md#sub-tasks): a ticket's parent, a ticket of the
-- same tenant in any project; NULL for a top-level ticket. Cycles and the
-- depth bound are the service's checks (internal/subtasks); the index serves
-- a parent's children and list_tickets(parent=…).
ALTER TABLE tickets ADD COLUMN parent_id text REFERENCES tickets (id);
CREATE INDEX tickets_parent ON tickets (tenant_id, parent_id) WHERE parent_id IS NOT NULL;

-- +goose Down
DROP INDEX tickets_parent;
ALTER TABLE tickets DROP COLUMN parent_id;
