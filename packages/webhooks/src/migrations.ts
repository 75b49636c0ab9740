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
];
