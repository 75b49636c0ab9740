import type { Migration } from '@tokenvault/platform';

/** The tenant of the current transaction, set by withTenant; NULL outside of one. */
const currentTenant = `nullif(current_setting('app.tenant_id', true), '')::uuid`;

export const proxiesMigrations: Migration[] = [
  {
    id: 'proxy/001_read_models',
    sql: `
      CREATE TABLE proxies (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        name text NOT NULL,
        destination_url text NOT NULL,
        request_reactor_id uuid,
        response_reactor_id uuid,
        request_transforms jsonb NOT NULL,
        response_transforms jsonb NOT NULL,
        -- An application of tenancy, read through its queries (never joined: another context).
        application_id uuid,
        -- Sealed under the tenant's data key, as in the events (opened by ProxyQueries).
        configuration_ciphertext text NOT NULL,
        key_ciphertext text NOT NULL,
        require_auth boolean NOT NULL,
        timeout_seconds double precision,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX proxies_by_creation ON proxies (tenant_id, created_at, id);
      ALTER TABLE proxies ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON proxies USING (tenant_id = ${currentTenant});

      -- How an invocation finds its proxy before it knows the tenant: the key's SHA-256 only.
      CREATE TABLE proxy_keys (
        key_hash text PRIMARY KEY,
        tenant_id uuid NOT NULL,
        proxy_id uuid NOT NULL
      );
      CREATE INDEX proxy_keys_by_proxy ON proxy_keys (tenant_id, proxy_id);
      GRANT SELECT ON proxies, proxy_keys TO {{app_role}};
    `,
  },
];
