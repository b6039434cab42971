-- +goose Up
-- As on PostgreSQL (migrations/postgres/00017): the listing index is
-- partial, so that a lookup by key can use only the primary key, and the
-- two dialects keep one schema.
DROP INDEX operations_tenant_created;
CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, action DESC, operation_id DESC)
    WHERE created_at IS NOT NULL;

-- +goose Down
DROP INDEX operations_tenant_created;
CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, action DESC, operation_id DESC);
