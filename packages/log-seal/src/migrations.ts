import type { Migration } from '@tokenvault/platform';

export const logSealMigrations: Migration[] = [
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
];
