import type { Migration } from '@tokenvault/platform';

/** The tenant of the current transaction, set by withTenant; NULL outside of one. */
const currentTenant = `nullif(current_setting('app.tenant_id', true), '')::uuid`;

export const reactorsMigrations: Migration[] = [
  {
    id: 'reactors/001_read_models',
    sql: `
      CREATE TABLE reactor_formulas (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        name text NOT NULL,
        description text,
        type text NOT NULL,
        code text NOT NULL,
        configuration jsonb NOT NULL,
        request_parameters jsonb NOT NULL,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX reactor_formulas_by_creation ON reactor_formulas (tenant_id, created_at, id);
      CREATE TABLE reactors (
        tenant_id uuid NOT NULL,
        id uuid NOT NULL,
        name text NOT NULL,
        formula_id uuid NOT NULL,
        -- Sealed under the tenant's data key, as in the events (opened by ReactorQueries).
        configuration_ciphertext text NOT NULL,
        -- An application of tenancy, shown through its queries (never joined: another context).
        application_id uuid,
        created_by uuid,
        created_at timestamptz,
        modified_by uuid,
        modified_at timestamptz,
        PRIMARY KEY (tenant_id, id)
      );
      CREATE INDEX reactors_by_creation ON reactors (tenant_id, created_at, id);
      CREATE INDEX reactors_by_formula ON reactors (tenant_id, formula_id);

      ALTER TABLE reactor_formulas ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON reactor_formulas USING (tenant_id = ${currentTenant});
      ALTER TABLE reactors ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON reactors USING (tenant_id = ${currentTenant});
      GRANT SELECT ON reactor_formulas, reactors TO {{app_role}};
    `,
  },
];
