import type { Migration } from '@tokenvault/platform';

/** The tenant of the current transaction, set by withTenant; NULL outside of one. */
const currentTenant = `nullif(current_setting('app.tenant_id', true), '')::uuid`;

export const webhooksMigrations: Migration[] = [
  {
    id: 'webhooks/001_read_models',
    sql: `
      CREATE TABLE webhooks (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        name text NOT NULL,
        url text NOT NULL,
        events text[] NOT NULL,
        notify_email text,
        status text NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX webhooks_by_creation ON webhooks (tenant_id, created_at, id);
      ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON webhooks USING (tenant_id = ${currentTenant});
      GRANT SELECT ON webhooks TO {{app_role}};
    `,
  },
  {
    id: 'webhooks/002_deliveries',
    sql: `
      -- The delivery enqueuer's own copy of the subscriptions, written in its checkpoint's
      -- transaction: what it matches an event against is the log up to that event, whatever the
      -- read models' projection mode.
      CREATE TABLE webhook_delivery_subscriptions (
        tenant_id uuid NOT NULL,
        webhook_id uuid NOT NULL,
        url text NOT NULL,
        events text[] NOT NULL,
        status text NOT NULL,
        PRIMARY KEY (tenant_id, webhook_id)
      );
      -- One row per delivery (webhook and event): its outcome, never its body.
      CREATE TABLE webhook_deliveries (
        tenant_id uuid NOT NULL,
        webhook_id uuid NOT NULL,
        id text NOT NULL,
        event_id text NOT NULL,
        event_type text NOT NULL,
        status text NOT NULL,
        attempts integer NOT NULL,
        response_status integer,
        error text,
        created_at timestamptz NOT NULL,
        last_attempt_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, webhook_id, id)
      );
      CREATE INDEX webhook_deliveries_by_time ON webhook_deliveries (tenant_id, webhook_id, created_at DESC, id);
      CREATE INDEX webhook_deliveries_by_age ON webhook_deliveries (created_at);
      ALTER TABLE webhook_deliveries ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON webhook_deliveries USING (tenant_id = ${currentTenant});
      GRANT SELECT ON webhook_deliveries TO {{app_role}};
    `,
  },
  {
    id: 'webhooks/003_delivery_order',
    sql: `
      -- Each webhook's deliveries are numbered in the log's order by the enqueuer (in its
      -- checkpoint's transaction): the last number given is kept with the subscription.
      ALTER TABLE webhook_delivery_subscriptions ADD COLUMN last_sequence bigint NOT NULL DEFAULT 0;
      -- The deliveries not finished yet, by webhook and number: one waits for every earlier one of
      -- its webhook to be finished (succeeded, failed every attempt, gone or skipped).
      CREATE TABLE webhook_pending_deliveries (
        tenant_id uuid NOT NULL,
        webhook_id uuid NOT NULL,
        sequence bigint NOT NULL,
        delivery_id text NOT NULL,
        PRIMARY KEY (tenant_id, webhook_id, sequence)
      );
    `,
  },
  {
    id: 'webhooks/004_delivery_drain',
    sql: `
      -- A webhook's pending deliveries are sent by one drain at a time, in order, from this table:
      -- each row carries the delivery (public data only, as its job did) and its retry state.
      -- Rows queued by the earlier design (one job each) carry none and are sent by their jobs.
      ALTER TABLE webhook_pending_deliveries
        ADD COLUMN delivery jsonb,
        ADD COLUMN attempts integer NOT NULL DEFAULT 0,
        ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now();
      -- Who drains the webhook now, until when (renewed as it goes): a drain that dies lets go
      -- within WEBHOOK_DELIVERY_LOCK_MS.
      ALTER TABLE webhook_delivery_subscriptions ADD COLUMN drain_lease_until timestamptz;
      -- The delivery as sent (public data only, never an answer), so it can be redelivered while
      -- the history keeps it.
      ALTER TABLE webhook_deliveries ADD COLUMN delivery jsonb;
    `,
  },
];
