-- +goose Up
-- As on PostgreSQL (migrations/postgres/00018): tickets_tenant_id_desc holds
-- what tickets_tenant_id_key (tenant_id, id) holds since 00008, and SQLite
-- reads an index backward as readily.
DROP INDEX tickets_tenant_id_desc;

-- +goose Down
CREATE INDEX tickets_tenant_id_desc ON tickets (tenant_id, id DESC);
