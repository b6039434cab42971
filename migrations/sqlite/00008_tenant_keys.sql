-- +goose Up
-- The PostgreSQL migration of this version makes every primary and unique
-- key lead with tenant_id, for distribution by tenant (docs/scale.md). SQLite
-- never shards, and changing a primary key here means rebuilding the table
-- with its column list spelled out, which would silently drop any column a
-- later migration of another branch adds. So the tenant-led keys are added
-- beside the id-only ones: the same rows are unique per tenant on both
-- engines, and TestKeysLeadWithTenant checks each id-only key has its twin.
CREATE UNIQUE INDEX tickets_tenant_id_key ON tickets (tenant_id, id);
CREATE UNIQUE INDEX comments_tenant_id_key ON comments (tenant_id, id);
CREATE UNIQUE INDEX ticket_events_tenant_id_key ON ticket_events (tenant_id, id);
CREATE UNIQUE INDEX webhook_deliveries_tenant_subscription_webhook ON webhook_deliveries (tenant_id, subscription_id, webhook_id);

-- +goose Down
DROP INDEX webhook_deliveries_tenant_subscription_webhook;
DROP INDEX ticket_events_tenant_id_key;
DROP INDEX comments_tenant_id_key;
DROP INDEX tickets_tenant_id_key;
