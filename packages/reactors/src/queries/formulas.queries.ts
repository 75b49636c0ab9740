import { namePattern, withTenant, type Pool } from '@tokenvault/platform';
import type { ReactorFormulaResponse } from '@tokenvault/contracts';

export interface FormulaRow {
  id: string;
  tenant_id: string;
  name: string;
  description: string | null;
  type: ReactorFormulaResponse['type'];
  code: string;
  configuration: ReactorFormulaResponse['configuration'];
  request_parameters: ReactorFormulaResponse['request_parameters'];
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

export const formulaColumns = [
  'id',
  'tenant_id',
  'name',
  'description',
  'type',
  'code',
  'configuration',
  'request_parameters',
  'created_by',
  'created_at',
  'modified_by',
  'modified_at',
] as const;

export function formulaResponse(row: FormulaRow): ReactorFormulaResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    ...(row.description === null ? {} : { description: row.description }),
    type: row.type,
    code: row.code,
    configuration: row.configuration,
    request_parameters: row.request_parameters,
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

const columns = formulaColumns.join(', ');

/** Reads run as the tenant: row-level security hides every other tenant's rows. */
export class FormulaQueries {
  private readonly appPool: Pool;

  constructor(appPool: Pool) {
    this.appPool = appPool;
  }

  async get(tenantId: string, id: string): Promise<ReactorFormulaResponse | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<FormulaRow>(
        `SELECT ${columns} FROM reactor_formulas WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      );
      return result.rows[0] && formulaResponse(result.rows[0]);
    });
  }

  async list(
    tenantId: string,
    filter: { name?: string | undefined },
    page: number,
    size: number,
  ): Promise<{ items: ReactorFormulaResponse[]; total: number }> {
    const where = ['tenant_id = $1'];
    const values: unknown[] = [tenantId];
    if (filter.name !== undefined) {
      values.push(namePattern(filter.name));
      where.push(`name ILIKE $${values.length} ESCAPE '\\'`);
    }
    const condition = where.join(' AND ');
    return withTenant(this.appPool, tenantId, async (client) => {
      const [rows, count] = await Promise.all([
        client.query<FormulaRow>(
          `SELECT ${columns} FROM reactor_formulas WHERE ${condition}
           ORDER BY created_at, id LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
          [...values, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          `SELECT count(*)::int AS total FROM reactor_formulas WHERE ${condition}`,
          values,
        ),
      ]);
      return { items: rows.rows.map(formulaResponse), total: count.rows[0]?.total ?? 0 };
    });
  }
}
