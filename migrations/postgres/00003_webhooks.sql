-- +goose Up
-- Webhook subscriptions, one outbox row per (event, subscription) and every
-- attempt made to deliver it. The job queue that schedules the attempts
-- (River) keeps its own river_* tables, applied by webhooks.Migrate.
CREATE TABLE webhook_subscriptions (
    tenant_id       text        NOT NULL,
    id              uuid        NOT NULL,
    url             text        NOT NULL,
    events          text        NOT NULL, -- JSON array of event types
    description     text        NOT NULL DEFAULT '',
    secret          text        NOT NULL, -- whsec_…: needed in clear to sign every delivery
    status          text        NOT NULL CHECK (status IN ('active', 'disabled')),
    disabled_reason text,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE webhook_deliveries (
    tenant_id        text        NOT NULL,
    id               uuid        NOT NULL,
    subscription_id  uuid        NOT NULL,
    webhook_id       uuid        NOT NULL, -- the event's ID: the idempotency key the receiver sees
    event_type       text        NOT NULL,
    operation_id     uuid,
    ticket_id        uuid,
    payload          text        NOT NULL, -- the exact body, so every attempt signs the same bytes
    status           text        NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer     NOT NULL DEFAULT 0,
    last_error       text,
    last_status_code integer,
    leased_until     timestamptz, -- an attempt in flight: no second worker sends it meanwhile
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (subscription_id, webhook_id),
    FOREIGN KEY (tenant_id, subscription_id) REFERENCES webhook_subscriptions (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX webhook_deliveries_operation ON webhook_deliveries (tenant_id, operation_id);
CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (tenant_id, subscription_id, id DESC);

CREATE TABLE webhook_attempts (
    tenant_id   text        NOT NULL,
    delivery_id uuid        NOT NULL,
    attempt     integer     NOT NULL CHECK (attempt >= 1),
    outcome     text        NOT NULL CHECK (outcome IN ('delivered', 'failed', 'unknown')),
    status_code integer,
    latency_ms  bigint      NOT NULL,
    error       text,
    started_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, delivery_id, attempt),
    FOREIGN KEY (tenant_id, delivery_id) REFERENCES webhook_deliveries (tenant_id, id) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhook_subscriptions;
