import type { Migration } from '@tokenvault/platform';

/** The tenant of the current transaction, set by withTenant; NULL outside of one. */
const currentTenant = `nullif(current_setting('app.tenant_id', true), '')::uuid`;

export const tenancyMigrations: Migration[] = [
  {
    id: 'tenancy/001_read_models',
    sql: `
      CREATE TABLE tenants (
        id uuid PRIMARY KEY,
        owner_id uuid NOT NULL,
        name text NOT NULL,
        settings jsonb NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz
      );
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        email text NOT NULL,
        first_name text,
        last_name text,
        picture text,
        created_at timestamptz NOT NULL
      );
      CREATE INDEX users_email ON users (lower(email));
      CREATE TABLE tenant_members (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        user_id uuid NOT NULL,
        role text NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id),
        UNIQUE (tenant_id, user_id)
      );
      CREATE TABLE applications (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        name text NOT NULL,
        type text NOT NULL,
        permissions text[] NOT NULL,
        rules jsonb NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX applications_by_creation ON applications (tenant_id, created_at, id);
      -- Key digests resolve a request to its tenant before any tenant is known: owner role only.
      CREATE TABLE api_keys (
        key_hash text PRIMARY KEY,
        tenant_id uuid NOT NULL,
        application_id uuid NOT NULL
      );
      CREATE INDEX api_keys_by_application ON api_keys (tenant_id, application_id);

      ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON tenants USING (id = ${currentTenant});
      ALTER TABLE tenant_members ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON tenant_members USING (tenant_id = ${currentTenant});
      ALTER TABLE applications ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON applications USING (tenant_id = ${currentTenant});
      ALTER TABLE users ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON users USING (
        EXISTS (SELECT 1 FROM tenant_members m WHERE m.user_id = users.id AND m.tenant_id = ${currentTenant})
      );
      GRANT SELECT ON tenants, users, tenant_members, applications TO {{app_role}};
    `,
  },
  {
    id: 'tenancy/002_invitations',
    sql: `
      -- Pending invitations (EXPIRED is computed at read time from expires_at). Neither the link
      -- token nor its hash is kept here: acceptance checks the invitation's event stream.
      CREATE TABLE tenant_invitations (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        email text NOT NULL,
        link_version integer NOT NULL,
        expires_at timestamptz NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX tenant_invitations_by_creation ON tenant_invitations (tenant_id, created_at, id);
      CREATE INDEX tenant_invitations_by_email ON tenant_invitations (tenant_id, lower(email));
      CREATE INDEX tenant_members_by_creation ON tenant_members (tenant_id, created_at, id);
      ALTER TABLE tenant_invitations ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON tenant_invitations USING (tenant_id = ${currentTenant});
      GRANT SELECT ON tenant_invitations TO {{app_role}};
    `,
  },
  {
    id: 'tenancy/003_application_rate_limit',
    sql: `
      -- An application's own request quota ({"requests_per_minute": n}); NULL: the default.
      ALTER TABLE applications ADD COLUMN rate_limit jsonb;
    `,
  },
  {
    id: 'tenancy/004_unique_claims',
    // The uniqueness claims of what the read models hold from before claims existed (keys as
    // domain/uniqueness.ts makes them); the oldest holder of a key keeps it.
    sql: `
      INSERT INTO es_unique_claims (scope, key, holder)
        SELECT DISTINCT ON (lower(email)) 'user-email', lower(email), id::text FROM users
        ORDER BY lower(email), created_at, id
        ON CONFLICT DO NOTHING;
      INSERT INTO es_unique_claims (scope, key, holder, tenant_id)
        SELECT DISTINCT ON (tenant_id, lower(email)) 'invitation-email', tenant_id || ':' || lower(email), id::text, tenant_id
        FROM tenant_invitations ORDER BY tenant_id, lower(email), created_at, id
        ON CONFLICT DO NOTHING;
      INSERT INTO es_unique_claims (scope, key, holder, tenant_id)
        SELECT DISTINCT ON (tenant_id, user_id) 'tenant-member', tenant_id || ':' || user_id, id::text, tenant_id
        FROM tenant_members ORDER BY tenant_id, user_id, created_at, id
        ON CONFLICT DO NOTHING;
    `,
  },
  {
    id: 'tenancy/005_sessions',
    sql: `
      -- Members' sign-in links and sessions: the owner role only (they resolve a caller before any
      -- tenant is known). Only SHA-256 digests of the link and session tokens are kept.
      -- One pending sign-in link per user: a newer request replaces it (a new id).
      CREATE TABLE sign_in_links (
        user_id uuid PRIMARY KEY,
        id uuid NOT NULL UNIQUE,
        token_hash text NOT NULL,
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      );
      CREATE TABLE sessions (
        id uuid PRIMARY KEY,
        token_hash text NOT NULL UNIQUE,
        user_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        last_seen_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        ended_at timestamptz
      );
      CREATE INDEX sessions_by_user ON sessions (user_id);
    `,
  },
  {
    id: 'tenancy/006_sign_in_links_per_browser',
    sql: `
      -- A sign-in link works only in the browser that asked for it (the SHA-256 of a nonce cookie
      -- set by POST /sessions/email): one pending link per user and browser, so a request from
      -- elsewhere never replaces the link a member asked for. Links pending now (15 minutes at
      -- most) were bound to no browser: they are dropped.
      DELETE FROM sign_in_links;
      ALTER TABLE sign_in_links DROP CONSTRAINT sign_in_links_pkey;
      ALTER TABLE sign_in_links ADD COLUMN browser_hash text NOT NULL;
      ALTER TABLE sign_in_links ADD PRIMARY KEY (user_id, browser_hash);
    `,
  },
  {
    id: 'tenancy/007_application_keys',
    sql: `
      -- Several keys per application, each with an id, its creation and an optional expiry. A key
      -- from before has its application's id as its id (firstKeyIdOf in domain/application.ts),
      -- as the projection gives the key of every ApplicationCreated.
      ALTER TABLE api_keys
        ADD COLUMN id uuid,
        ADD COLUMN expires_at timestamptz,
        ADD COLUMN created_by uuid,
        ADD COLUMN created_at timestamptz;
      UPDATE api_keys SET id = application_id;
      UPDATE api_keys k SET created_by = a.created_by, created_at = a.created_at
        FROM applications a WHERE a.tenant_id = k.tenant_id AND a.id = k.application_id;
      ALTER TABLE api_keys ALTER COLUMN id SET NOT NULL;
      DROP INDEX api_keys_by_application;
      CREATE UNIQUE INDEX api_keys_by_id ON api_keys (tenant_id, application_id, id);
      -- The app role lists a tenant's keys (row-level security) and never reads their digests.
      ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON api_keys USING (tenant_id = ${currentTenant});
      GRANT SELECT (id, tenant_id, application_id, expires_at, created_by, created_at) ON api_keys TO {{app_role}};
    `,
  },
];
