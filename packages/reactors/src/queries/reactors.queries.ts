import { namePattern, withTenant, type Pool } from '@tokenvault/platform';
import type { ReactorResponse } from '@tokenvault/contracts';
import type { ApplicationQueries } from '@tokenvault/tenancy';
import type { Vault } from '@tokenvault/vault';
import { configurationSubject, type ReactorConfiguration } from '../domain/reactors.events.ts';
import { formulaColumns, formulaResponse, type FormulaRow } from './formulas.queries.ts';

interface ReactorRow {
  id: string;
  tenant_id: string;
  name: string;
  configuration_ciphertext: string;
  application_id: string | null;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
  formula: Omit<FormulaRow, 'created_at' | 'modified_at'> & {
    created_at: string | null;
    modified_at: string | null;
  };
}

/** The formula of each reactor, as one JSON object (its own context's table: joined). */
const select = `SELECT r.id, r.tenant_id, r.name, r.configuration_ciphertext, r.application_id, r.created_by, r.created_at,
         r.modified_by, r.modified_at,
         json_build_object(${formulaColumns.map((column) => `'${column}', f.${column}`).join(', ')}) AS formula
    FROM reactors r JOIN reactor_formulas f ON f.tenant_id = r.tenant_id AND f.id = r.formula_id`;

const date = (value: string | null) => (value === null ? null : new Date(value));

/**
 * Reads run as the tenant: row-level security hides every other tenant's rows. Configurations are
 * sealed in the read model and opened here, with the tenant's data key, for each response.
 */
export class ReactorQueries {
  private readonly appPool: Pool;
  /** Applications belong to tenancy: read through its queries, never its tables. */
  private readonly applications: ApplicationQueries;
  private readonly vault: Vault;

  constructor(appPool: Pool, applications: ApplicationQueries, vault: Vault) {
    this.appPool = appPool;
    this.applications = applications;
    this.vault = vault;
  }

  private async responses(tenantId: string, rows: ReactorRow[]): Promise<ReactorResponse[]> {
    const ids = [...new Set(rows.flatMap((row) => (row.application_id ? [row.application_id] : [])))];
    const applications = new Map(
      (await this.applications.getMany(tenantId, ids)).map((application) => [application.id, application]),
    );
    return Promise.all(
      rows.map(async (row) => {
        // A deleted application is no longer shown (nor, later, used): the reactor runs without one.
        const application = row.application_id ? applications.get(row.application_id) : undefined;
        const configuration = (await this.vault.decrypt(
          row.tenant_id,
          configurationSubject(row.id),
          row.configuration_ciphertext,
        )) as ReactorConfiguration;
        return {
          id: row.id,
          tenant_id: row.tenant_id,
          name: row.name,
          formula: formulaResponse({
            ...row.formula,
            created_at: date(row.formula.created_at),
            modified_at: date(row.formula.modified_at),
          }),
          configuration,
          ...(application
            ? { application: { id: application.id, name: application.name, type: application.type } }
            : {}),
          ...(row.created_by ? { created_by: row.created_by } : {}),
          ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
          ...(row.modified_by ? { modified_by: row.modified_by } : {}),
          ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
        };
      }),
    );
  }

  async get(tenantId: string, id: string): Promise<ReactorResponse | undefined> {
    const rows = await withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<ReactorRow>(`${select} WHERE r.tenant_id = $1 AND r.id = $2`, [
        tenantId,
        id,
      ]);
      return result.rows;
    });
    return (await this.responses(tenantId, rows))[0];
  }

  async list(
    tenantId: string,
    filter: { ids: readonly string[]; name?: string | undefined },
    page: number,
    size: number,
  ): Promise<{ items: ReactorResponse[]; total: number }> {
    const where = ['r.tenant_id = $1'];
    const values: unknown[] = [tenantId];
    if (filter.ids.length > 0) {
      values.push(filter.ids);
      where.push(`r.id = ANY($${values.length}::uuid[])`);
    }
    if (filter.name !== undefined) {
      values.push(namePattern(filter.name));
      where.push(`r.name ILIKE $${values.length} ESCAPE '\\'`);
    }
    const condition = where.join(' AND ');
    const { rows, total } = await withTenant(this.appPool, tenantId, async (client) => {
      const [page_, count] = await Promise.all([
        client.query<ReactorRow>(
          `${select} WHERE ${condition}
           ORDER BY r.created_at, r.id LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
          [...values, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          `SELECT count(*)::int AS total FROM reactors r WHERE ${condition}`,
          values,
        ),
      ]);
      return { rows: page_.rows, total: count.rows[0]?.total ?? 0 };
    });
    return { items: await this.responses(tenantId, rows), total };
  }

  /** The tenant's reactors of this formula bound to an application (its code runs as them). */
  async reactorsWithApplicationUsingFormula(
    tenantId: string,
    formulaId: string,
  ): Promise<{ id: string; application_id: string }[]> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<{ id: string; application_id: string }>(
        `SELECT id, application_id FROM reactors
          WHERE tenant_id = $1 AND formula_id = $2 AND application_id IS NOT NULL
          ORDER BY id`,
        [tenantId, formulaId],
      );
      return result.rows;
    });
  }

  /** How many reactors of the tenant run this formula (a formula in use cannot be deleted). */
  async countUsingFormula(tenantId: string, formulaId: string): Promise<number> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<{ count: number }>(
        'SELECT count(*)::int AS count FROM reactors WHERE tenant_id = $1 AND formula_id = $2',
        [tenantId, formulaId],
      );
      return result.rows[0]?.count ?? 0;
    });
  }
}
