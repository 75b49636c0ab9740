import { withTenant, type Pool } from '@tokenvault/platform';
import type { ApplicationResponse } from '@tokenvault/contracts';

interface ApplicationRow {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationResponse['type'];
  permissions: ApplicationResponse['permissions'];
  rules: ApplicationResponse['rules'];
  rate_limit: ApplicationResponse['rate_limit'] | null;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

const columns =
  'id, tenant_id, name, type, permissions, rules, rate_limit, created_by, created_at, modified_by, modified_at';

function toResponse(row: ApplicationRow): ApplicationResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    name: row.name,
    type: row.type,
    permissions: row.permissions,
    rules: row.rules,
    ...(row.rate_limit ? { rate_limit: row.rate_limit } : {}),
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

/** Reads run as the tenant: row-level security hides every other tenant's rows. */
export class ApplicationQueries {
  private readonly appPool: Pool;
  constructor(appPool: Pool) {
    this.appPool = appPool;
  }

  async get(tenantId: string, id: string): Promise<ApplicationResponse | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<ApplicationRow>(
        `SELECT ${columns} FROM applications WHERE tenant_id = $1 AND id = $2`,
        [tenantId, id],
      );
      return result.rows[0] && toResponse(result.rows[0]);
    });
  }

  /** The applications of these ids that exist (for other contexts that reference applications). */
  async getMany(tenantId: string, ids: readonly string[]): Promise<ApplicationResponse[]> {
    if (ids.length === 0) return [];
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<ApplicationRow>(
        `SELECT ${columns} FROM applications WHERE tenant_id = $1 AND id = ANY($2::uuid[])`,
        [tenantId, ids],
      );
      return result.rows.map(toResponse);
    });
  }

  async list(
    tenantId: string,
    page: number,
    size: number,
  ): Promise<{ items: ApplicationResponse[]; total: number }> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const [rows, count] = await Promise.all([
        client.query<ApplicationRow>(
          `SELECT ${columns} FROM applications WHERE tenant_id = $1
           ORDER BY created_at, id LIMIT $2 OFFSET $3`,
          [tenantId, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          'SELECT count(*)::int AS total FROM applications WHERE tenant_id = $1',
          [tenantId],
        ),
      ]);
      return { items: rows.rows.map(toResponse), total: count.rows[0]?.total ?? 0 };
    });
  }
}
