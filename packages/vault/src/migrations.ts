import type { Migration } from '@tokenvault/platform';

export const vaultMigrations: Migration[] = [
  {
    id: 'vault/001_tenant_keys',
    // Only the owner role reads this table: the app role never sees wrapped keys.
    sql: `
      CREATE TABLE tenant_keys (
        tenant_id uuid PRIMARY KEY,
        wrapped_data_key text NOT NULL,
        wrapped_fingerprint_key text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      REVOKE ALL ON tenant_keys FROM PUBLIC;
    `,
  },
  {
    id: 'vault/002_key_versions_and_token_keys',
    // Keys from before this migration are version 1 of their tenant, wrapped by the master key
    // that MASTER_KEY still supplies as the ring's "default" version.
    sql: `
      ALTER TABLE tenant_keys
        ADD COLUMN version integer NOT NULL DEFAULT 1,
        ADD COLUMN kek_id text NOT NULL DEFAULT 'default',
        ADD COLUMN retired_at timestamptz;
      ALTER TABLE tenant_keys DROP CONSTRAINT tenant_keys_pkey, ADD PRIMARY KEY (tenant_id, version);
      CREATE INDEX tenant_keys_kek ON tenant_keys (kek_id);
      CREATE TABLE token_keys (
        tenant_id uuid NOT NULL,
        token_id text NOT NULL,
        wrapped_key text NOT NULL,
        tenant_key_version integer NOT NULL,
        expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, token_id)
      );
      CREATE INDEX token_keys_expiry ON token_keys (expires_at) WHERE expires_at IS NOT NULL;
      CREATE INDEX token_keys_version ON token_keys (tenant_id, tenant_key_version);
      REVOKE ALL ON token_keys FROM PUBLIC;
    `,
  },
  {
    id: 'vault/003_token_keys_read_with_their_tokens',
    // The app role reads its tenant's wrapped token keys with the token rows, so opening a token
    // needs no query of its own. A wrapped key is ciphertext under a tenant data key, which stays
    // in tenant_keys (owner role only) wrapped by the master key: the app role still holds no key
    // that opens anything. Writes and the sweep stay the owner role's (it owns the table, so the
    // policy does not apply to it). The version index goes: on a table not analyzed yet the
    // planner took it, as cheap as the primary key, for the join's lookups (a scan of the
    // tenant's keys per token); rotation walks the primary key instead.
    sql: `
      DROP INDEX token_keys_version;
      ALTER TABLE token_keys ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_keys
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT (tenant_id, token_id, wrapped_key, tenant_key_version) ON token_keys TO {{app_role}};
    `,
  },
];
