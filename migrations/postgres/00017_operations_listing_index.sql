-- +goose Up
-- The listing index is partial, and only Ledger.List says its predicate, so
-- a lookup by key (tenant_id, action, operation_id) can use the primary key
-- alone. Both lead with tenant_id and name the key's columns; on small
-- tables the two cost the same, and a plan made once per connection there
-- (the lookup every write sends first, db.Statement.ByKey) took this one and
-- read the whole tenant on every lookup once the table had grown
-- (docs/perf.md, TestReplayReadsOnlyItsOwnKeyAfterTheTablesGrow). created_at
-- is NOT NULL, so the index holds every record.
DROP INDEX operations_tenant_created;
CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, action DESC, operation_id DESC)
    WHERE created_at IS NOT NULL;

-- +goose Down
DROP INDEX operations_tenant_created;
CREATE INDEX operations_tenant_created ON operations (tenant_id, created_at DESC, action DESC, operation_id DESC);
