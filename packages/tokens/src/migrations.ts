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
  {
    id: 'tokens/008_child_counts',
    // A child page's total without counting every child: the number of a parent's children by
    // type that never expire, kept by triggers on token_associations in the writing transaction
    // (so every write path, the tenant's deletion and a rebuild's replay keep it exact). Children
    // with an expiry are counted live (few, along the partial index), since time expires them.
    // Each parent and type has up to 16 rows (slots, by a hash of the child id), so that children
    // created at once under one parent do not all wait for one row lock; a total sums them.
    sql: `
      CREATE TABLE token_child_counts (
        tenant_id uuid NOT NULL,
        parent_id text NOT NULL,
        type text NOT NULL,
        slot smallint NOT NULL,
        children integer NOT NULL,
        PRIMARY KEY (tenant_id, parent_id, type, slot)
      );
      ALTER TABLE token_child_counts ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_child_counts
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_child_counts TO {{app_role}};
      CREATE INDEX token_associations_expiring ON token_associations (tenant_id, parent_id, type)
        WHERE expires_at IS NOT NULL;
      -- A page of one type walks only that type's rows, in page order and index-only (a deep page
      -- walks every row before it): it replaces the same key without the filtered fields.
      CREATE INDEX token_associations_type_page ON token_associations (tenant_id, parent_id, type, associated_at, child_id)
        INCLUDE (containers, expires_at);
      DROP INDEX token_associations_by_parent_and_type;

      -- md5, not hashtext: a slot must not change with the server's version (a child's removal
      -- has to find the slot its addition counted in).
      CREATE FUNCTION token_child_count_slot(child_id text) RETURNS smallint
        IMMUTABLE LANGUAGE sql AS $$ SELECT (get_byte(decode(md5(child_id), 'hex'), 0) % 16)::smallint $$;

      -- +1 for each new row that never expires, -1 for each old one, summed by slot and applied in
      -- slot order (concurrent writers lock count rows in one order); slots back at zero are
      -- removed, so no trace of a deleted parent stays. One statement's rows at a time.
      CREATE FUNCTION token_child_counts_follow() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          INSERT INTO token_child_counts AS c (tenant_id, parent_id, type, slot, children)
            SELECT tenant_id, parent_id, type, token_child_count_slot(child_id), count(*)
            FROM new_rows WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
          ON CONFLICT (tenant_id, parent_id, type, slot) DO UPDATE SET children = c.children + excluded.children;
          RETURN NULL;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO token_child_counts AS c (tenant_id, parent_id, type, slot, children)
            SELECT tenant_id, parent_id, type, token_child_count_slot(child_id), -count(*)
            FROM old_rows WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
          ON CONFLICT (tenant_id, parent_id, type, slot) DO UPDATE SET children = c.children + excluded.children;
        ELSE
          INSERT INTO token_child_counts AS c (tenant_id, parent_id, type, slot, children)
            SELECT tenant_id, parent_id, type, token_child_count_slot(child_id), sum(change)
            FROM (SELECT *, 1 AS change FROM new_rows UNION ALL SELECT *, -1 FROM old_rows) AS changed
            WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4 HAVING sum(change) <> 0 ORDER BY 1, 2, 3, 4
          ON CONFLICT (tenant_id, parent_id, type, slot) DO UPDATE SET children = c.children + excluded.children;
        END IF;
        DELETE FROM token_child_counts c USING (SELECT DISTINCT tenant_id, parent_id FROM old_rows) AS o
          WHERE c.tenant_id = o.tenant_id AND c.parent_id = o.parent_id AND c.children = 0;
        RETURN NULL;
      END $$;
      CREATE TRIGGER token_child_counts_on_insert AFTER INSERT ON token_associations
        REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION token_child_counts_follow();
      CREATE TRIGGER token_child_counts_on_update AFTER UPDATE ON token_associations
        REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION token_child_counts_follow();
      CREATE TRIGGER token_child_counts_on_delete AFTER DELETE ON token_associations
        REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION token_child_counts_follow();

      INSERT INTO token_child_counts (tenant_id, parent_id, type, slot, children)
        SELECT tenant_id, parent_id, type, token_child_count_slot(child_id), count(*)
        FROM token_associations WHERE expires_at IS NULL GROUP BY 1, 2, 3, 4;
    `,
  },
  {
    id: 'tokens/009_privacy_and_summaries',
    // A token's privacy (null: created before it, the type's defaults apply), and the summaries
    // of a card (BIN, last four, brand, funding, expiry) and of a bank account (routing number,
    // last four), derived from the data by the command and carried by the events: the projection
    // never opens the data. Tokens created before have none until their data is updated. When a
    // card's CVC was removed: an async reactor result that saw the token before is withdrawn.
    sql: `
      ALTER TABLE tokens ADD COLUMN privacy jsonb, ADD COLUMN card jsonb, ADD COLUMN bank jsonb,
        ADD COLUMN cvc_removed_at timestamptz;
    `,
  },
  {
    id: 'tokens/010_search_indexes',
    // A token's search index expressions and fingerprint expression (echoed on reads), and one
    // row per blind value of its search indexes (HMAC under the tenant's search key, never the
    // value), kept by the tokens projection with the token row. A search walks the B-tree of one
    // value newest first and joins the page's tokens by primary key, as a metadata filter does
    // (text comparisons are leakproof: usable under the tenant policy).
    sql: `
      ALTER TABLE tokens ADD COLUMN search_indexes jsonb, ADD COLUMN fingerprint_expression text;
      CREATE TABLE token_search_index (
        tenant_id uuid NOT NULL,
        token_id text NOT NULL,
        value text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, token_id, value)
      );
      CREATE INDEX token_search_index_newest_first
        ON token_search_index (tenant_id, value, created_at DESC, token_id DESC);
      ALTER TABLE token_search_index ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_search_index
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_search_index TO {{app_role}};
    `,
  },
  {
    id: 'tokens/011_masks',
    // A token's mask expression as its create or last update gave it (null: its type's default).
    // An expression, not data: the masked value is evaluated on the data at read time.
    sql: `
      ALTER TABLE tokens ADD COLUMN mask jsonb;
    `,
  },
  {
    id: 'tokens/012_daily_creations',
    // Tokens created per UTC day and type, for the usage report's 30-day series: a counter kept
    // by the usage projection, so the report never counts token rows.
    sql: `
      CREATE TABLE token_daily_creations (
        tenant_id uuid NOT NULL,
        day date NOT NULL,
        type text NOT NULL,
        created bigint NOT NULL,
        PRIMARY KEY (tenant_id, day, type)
      );
      ALTER TABLE token_daily_creations ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_daily_creations
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_daily_creations TO {{app_role}};
    `,
  },
  {
    id: 'tokens/013_token_intents',
    // The token intents held now and when each expires, for the expiry sweep (owner role). No data:
    // an intent's ciphertext stays in its event, its key in token_keys.
    sql: `
      CREATE TABLE token_intents (
        tenant_id uuid NOT NULL,
        intent_id uuid NOT NULL,
        type text NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (tenant_id, intent_id)
      );
      CREATE INDEX token_intents_expiry ON token_intents (expires_at);
      ALTER TABLE token_intents ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_intents
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON token_intents TO {{app_role}};
    `,
  },
];
