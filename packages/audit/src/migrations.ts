import type { Migration } from '@tokenvault/platform';

export const auditMigrations: Migration[] = [
  {
    id: 'audit/001_logs',
    sql: `
      CREATE TABLE audit_logs (
        tenant_id uuid NOT NULL,
        created_at timestamptz NOT NULL,
        -- The event's global position: a unique, commit-ordered tie-breaker within a millisecond.
        position bigint NOT NULL,
        event_id uuid NOT NULL,
        actor_id uuid,
        actor_type text,
        entity_type text NOT NULL,
        entity_id text NOT NULL,
        operation text NOT NULL,
        message text NOT NULL,
        PRIMARY KEY (tenant_id, created_at, position)
      );
      CREATE INDEX audit_logs_by_entity ON audit_logs (tenant_id, entity_id, created_at, position);
      CREATE INDEX audit_logs_by_entity_type ON audit_logs (tenant_id, entity_type, created_at, position);
      ALTER TABLE audit_logs ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON audit_logs
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT ON audit_logs TO {{app_role}};
    `,
  },
  {
    id: 'audit/002_rows_per_event',
    sql: `
      -- An event may have several rows (a read of many tokens, one row each): a row's position is
      -- its event's global position times 128 plus its index among them (projections/audit.ts).
      -- Through negative values: events of one transaction share created_at, and a row moved to
      -- position * 128 in place could meet another row's old position on the primary key.
      UPDATE audit_logs SET position = -position;
      UPDATE audit_logs SET position = -position * 128;
    `,
  },
  {
    id: 'audit/003_rows_by_id',
    sql: `
      -- A row's id is its position (GET /logs/{id}/proof finds the row by it).
      CREATE INDEX audit_logs_by_position ON audit_logs (tenant_id, position);
    `,
  },
];
