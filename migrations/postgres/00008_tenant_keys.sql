-- +goose Up
-- Every primary and unique key leads with tenant_id (docs/scale.md), so the
-- tables can be distributed by tenant_id (Citus requires the distribution
-- column in every primary key, unique constraint and foreign key between
-- distributed tables) and each tenant's rows stay together on one node. The
-- IDs stay globally unique UUIDs; only the keys' shape changes. River's
-- river_* tables hold no tenant data and stay apart (docs/scale.md).
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_ticket_id_fkey;
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_comment_id_fkey;
ALTER TABLE comments DROP CONSTRAINT comments_ticket_id_fkey;

ALTER TABLE tickets DROP CONSTRAINT tickets_pkey;
ALTER TABLE tickets ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE comments DROP CONSTRAINT comments_pkey;
ALTER TABLE comments ADD PRIMARY KEY (tenant_id, id);
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_pkey;
ALTER TABLE ticket_events ADD PRIMARY KEY (tenant_id, id);

ALTER TABLE comments ADD FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id);
ALTER TABLE ticket_events ADD FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id);
ALTER TABLE ticket_events ADD FOREIGN KEY (tenant_id, comment_id) REFERENCES comments (tenant_id, id);

ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_subscription_id_webhook_id_key;
ALTER TABLE webhook_deliveries ADD UNIQUE (tenant_id, subscription_id, webhook_id);

-- +goose Down
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_tenant_id_subscription_id_webhook_id_key;
ALTER TABLE webhook_deliveries ADD UNIQUE (subscription_id, webhook_id);

ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_tenant_id_comment_id_fkey;
ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_tenant_id_ticket_id_fkey;
ALTER TABLE comments DROP CONSTRAINT comments_tenant_id_ticket_id_fkey;

ALTER TABLE ticket_events DROP CONSTRAINT ticket_events_pkey;
ALTER TABLE ticket_events ADD PRIMARY KEY (id);
ALTER TABLE comments DROP CONSTRAINT comments_pkey;
ALTER TABLE comments ADD PRIMARY KEY (id);
ALTER TABLE tickets DROP CONSTRAINT tickets_pkey;
ALTER TABLE tickets ADD PRIMARY KEY (id);

ALTER TABLE comments ADD FOREIGN KEY (ticket_id) REFERENCES tickets (id);
ALTER TABLE ticket_events ADD FOREIGN KEY (ticket_id) REFERENCES tickets (id);
ALTER TABLE ticket_events ADD FOREIGN KEY (comment_id) REFERENCES comments (id);
