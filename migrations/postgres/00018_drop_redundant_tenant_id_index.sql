-- +goose Up
-- tickets_tenant_id_desc (tenant_id, id DESC) has held what the primary key
-- holds since 00008 made that (tenant_id, id): a B-tree is walked either way,
-- so the newest first is the primary key read backward, and every ticket
-- written paid for a second copy of its key (docs/perf.md).
DROP INDEX tickets_tenant_id_desc;

-- +goose Down
CREATE INDEX tickets_tenant_id_desc ON tickets (tenant_id, id DESC);
