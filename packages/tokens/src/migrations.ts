import type { Migration } from '@tokenvault/platform';

export const tokensMigrations: Migration[] = [
  {
    id: 'tokens/001_read_model',
    sql: `
      CREATE TABLE tokens (
        tenant_id uuid NOT NULL,
        id text NOT NULL,
        type text NOT NULL,
        data_ciphertext text NOT NULL,
        containers text[] NOT NULL,
        metadata jsonb NOT NULL,
        fingerprint text NOT NULL,
        expires_at timestamptz,
        created_by uuid NOT NULL,
        created_at timestamptz NOT NULL,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX tokens_by_fingerprint ON tokens (tenant_id, type, fingerprint);
      ALTER TABLE tokens ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON tokens
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON tokens TO {{app_role}};
    `,
  },
];
