import type { Migration } from '@tokenvault/platform';

/**
 * The first one is recorded in deployed databases under the context's former name, `log-seal`,
 * with the former word for a tree head: applied migrations keep their ids and bodies, so it is
 * left as it was applied and 002 renames what it created.
 */
export const verifiableLogMigrations: Migration[] = [
  {
    id: 'log-seal/001_seals',
    sql: `
      -- The hash chain over the event log (docs/verifiable-log.md): one row per sealed batch of
      -- consecutive events. Written by the sealing processor only; never a read model (a rebuild
      -- leaves it), never changed once written.
      CREATE TABLE log_seals (
        number bigint PRIMARY KEY,
        previous_hash text NOT NULL,
        first_commit_position text NOT NULL,
        first_global_position text NOT NULL,
        last_commit_position text NOT NULL,
        last_global_position text NOT NULL,
        event_count integer NOT NULL CHECK (event_count > 0),
        merkle_root text NOT NULL,
        sealed_at timestamptz NOT NULL,
        seal_hash text NOT NULL UNIQUE,
        signature text,
        key_id text
      );

      -- Each sealed event's hash and place: verify-log names the event that no longer matches,
      -- and a proof gives the hashes of the other leaves (never their content). An event is
      -- sealed once (the primary key).
      CREATE TABLE log_sealed_events (
        event_id uuid PRIMARY KEY,
        seal_number bigint NOT NULL REFERENCES log_seals (number),
        leaf_index integer NOT NULL,
        commit_position text NOT NULL,
        global_position text NOT NULL,
        tenant_id uuid,
        event_hash bytea NOT NULL,
        CONSTRAINT log_sealed_events_leaf_unique UNIQUE (seal_number, leaf_index)
      );

      -- The app role reads its tenant's event hashes for GET /logs; the seals are read by the
      -- owner role, after the row was found under row-level security.
      ALTER TABLE log_sealed_events ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON log_sealed_events
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON log_sealed_events TO {{app_role}};
    `,
  },
  {
    id: 'verifiable-log/002_tree_heads',
    sql: `
      -- "Seal" means encryption in this service; the log's hash chain is of tree heads (RFC 9162's
      -- word), its rows are their Merkle trees' leaves. Renamed in place: every row, and so the
      -- chain and each tree head's hash, stays as it was.
      ALTER TABLE log_seals RENAME TO log_tree_heads;
      ALTER TABLE log_tree_heads RENAME COLUMN sealed_at TO signed_at;
      ALTER TABLE log_tree_heads RENAME COLUMN seal_hash TO tree_head_hash;
      ALTER TABLE log_tree_heads RENAME CONSTRAINT log_seals_pkey TO log_tree_heads_pkey;
      ALTER TABLE log_tree_heads RENAME CONSTRAINT log_seals_seal_hash_key TO log_tree_heads_tree_head_hash_key;
      ALTER TABLE log_tree_heads RENAME CONSTRAINT log_seals_event_count_check TO log_tree_heads_event_count_check;

      ALTER TABLE log_sealed_events RENAME TO log_tree_leaves;
      ALTER TABLE log_tree_leaves RENAME COLUMN seal_number TO tree_head_number;
      ALTER TABLE log_tree_leaves RENAME CONSTRAINT log_sealed_events_pkey TO log_tree_leaves_pkey;
      ALTER TABLE log_tree_leaves
        RENAME CONSTRAINT log_sealed_events_seal_number_fkey TO log_tree_leaves_tree_head_number_fkey;
      ALTER TABLE log_tree_leaves RENAME CONSTRAINT log_sealed_events_leaf_unique TO log_tree_leaves_leaf_unique;

      -- The signer's checkpoint (projection_checkpoints, of the cqrs migrations, which run first)
      -- goes on under its new name: left under the old one, the signer would start again from the
      -- first event, which the chain already covers.
      UPDATE projection_checkpoints SET name = 'log-tree-heads' WHERE name = 'log-sealer';
    `,
  },
  {
    id: 'verifiable-log/003_shared_leaves',
    sql: `
      -- A batch of reads (TokensReadBatch) is one event of several tenants, its metadata the nil
      -- tenant: each tenant with a read in it has a log row naming it, and so sees its hash and tree
      -- head. A leaf holds only the event's id, place and hash, never what it says.
      DROP POLICY tenant_isolation ON log_tree_leaves;
      CREATE POLICY tenant_isolation ON log_tree_leaves
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
               OR tenant_id = '00000000-0000-0000-0000-000000000000');
    `,
  },
];
