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
  {
    id: 'tokens/002_usage',
    sql: `
      CREATE TABLE token_type_usage (
        tenant_id uuid NOT NULL,
        type text NOT NULL,
        count bigint NOT NULL,
        last_created_at timestamptz,
        PRIMARY KEY (tenant_id, type)
      );
      -- One row per token active (created, read or used) in a calendar month (UTC): distinctness.
      CREATE TABLE token_monthly_activity (
        tenant_id uuid NOT NULL,
        month date NOT NULL,
        token_id text NOT NULL,
        PRIMARY KEY (tenant_id, month, token_id)
      );
      -- The count kept up to date with it, so a report never counts rows.
      CREATE TABLE token_monthly_usage (
        tenant_id uuid NOT NULL,
        month date NOT NULL,
        active_tokens bigint NOT NULL,
        PRIMARY KEY (tenant_id, month)
      );
      ALTER TABLE token_type_usage ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_type_usage
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      ALTER TABLE token_monthly_usage ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_monthly_usage
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_type_usage, token_monthly_usage TO {{app_role}};
    `,
  },
  {
    id: 'tokens/003_associations',
    sql: `
      CREATE TABLE token_associations (
        tenant_id uuid NOT NULL,
        parent_id text NOT NULL,
        child_id text NOT NULL,
        associated_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, parent_id, child_id)
      );
      -- Listing a parent's children in a stable order, and removing a deleted child everywhere.
      CREATE INDEX token_associations_by_parent ON token_associations (tenant_id, parent_id, associated_at, child_id);
      CREATE INDEX token_associations_by_child ON token_associations (tenant_id, child_id);
      ALTER TABLE token_associations ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_associations
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_associations TO {{app_role}};
    `,
  },
  {
    id: 'tokens/004_association_child_fields',
    // The child's immutable fields that filter a child list (type, containers, expiry) on the
    // association row: counting and paging then read only this table, and just the page's rows
    // are joined to tokens, by primary key.
    sql: `
      ALTER TABLE token_associations ADD COLUMN type text, ADD COLUMN containers text[], ADD COLUMN expires_at timestamptz;
      UPDATE token_associations a SET type = t.type, containers = t.containers, expires_at = t.expires_at
        FROM tokens t WHERE t.tenant_id = a.tenant_id AND t.id = a.child_id;
      DELETE FROM token_associations WHERE type IS NULL;
      ALTER TABLE token_associations ALTER COLUMN type SET NOT NULL, ALTER COLUMN containers SET NOT NULL;
      CREATE INDEX token_associations_by_parent_and_type
        ON token_associations (tenant_id, parent_id, type, associated_at, child_id);
    `,
  },
  {
    id: 'tokens/005_token_list',
    // GET /tokens: newest first (page by page, or after a cursor of created_at and id). No GIN
    // index on metadata: reads run as the app role under row-level security, and jsonb @> is not
    // leakproof, so PostgreSQL cannot use such an index before the tenant policy (measured: a
    // sequential scan). Association rows keep the child's containers and expiry, which
    // TokenUpdated now changes: the projection updates them with the token.
    sql: `
      CREATE INDEX tokens_newest_first ON tokens (tenant_id, created_at DESC, id DESC);
    `,
  },
  {
    id: 'tokens/006_metadata_lookup',
    // One row per metadata entry of a live token, kept by the tokens projection with the token
    // row. A metadata filter walks the B-tree of one entry newest first and joins the page's tokens
    // by primary key: text and timestamptz comparisons are leakproof, so the index is usable under
    // the tenant policy (jsonb @> on tokens.metadata is not, see 005). created_at is the token's
    // (never changes), for the list's order and cursor.
    sql: `
      CREATE TABLE token_metadata (
        tenant_id uuid NOT NULL,
        token_id text NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, token_id, key)
      );
      CREATE INDEX token_metadata_newest_first
        ON token_metadata (tenant_id, key, value, created_at DESC, token_id DESC);
      ALTER TABLE token_metadata ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_metadata
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_metadata TO {{app_role}};
      INSERT INTO token_metadata (tenant_id, token_id, key, value, created_at)
        SELECT t.tenant_id, t.id, e.key, e.value, t.created_at FROM tokens t, jsonb_each_text(t.metadata) e;
    `,
  },
  {
    id: 'tokens/007_child_page_covering',
    // A child list counts and pages a parent's association rows by their filters (type, expiry,
    // containers): with them in the index, that is an index-only scan, without a heap read per
    // child. It replaces the index on the same key without them.
    sql: `
      CREATE INDEX token_associations_children_page ON token_associations (tenant_id, parent_id, associated_at, child_id)
        INCLUDE (type, containers, expires_at);
      DROP INDEX token_associations_by_parent;
    `,
  },
];
