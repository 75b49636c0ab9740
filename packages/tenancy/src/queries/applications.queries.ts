import { withTenant, type Pool } from '@tokenvault/platform';
import {
  transformOf,
  type AccessTransform,
  type ApplicationKeyResponse,
  type ApplicationResponse,
} from '@tokenvault/contracts';

interface ApplicationRow {
  id: string;
  tenant_id: string;
  name: string;
  type: ApplicationResponse['type'];
  permissions: ApplicationResponse['permissions'];
  /** As the events gave them: rules from before transforms have none (they reveal). */
  rules: (Omit<ApplicationResponse['rules'][number], 'transform'> & { transform?: AccessTransform })[];
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
    rules: row.rules.map((rule) => ({ ...rule, transform: transformOf(rule) })),
    ...(row.rate_limit ? { rate_limit: row.rate_limit } : {}),
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

interface KeyRow {
  id: string;
  tenant_id: string;
  application_id: string;
  expires_at: Date | null;
  created_by: string | null;
  created_at: Date | null;
}

/** What the app role may read of a key: never its digest (the column is not granted to it). */
const keyColumns = 'id, tenant_id, application_id, expires_at, created_by, created_at';

function toKeyResponse(row: KeyRow): ApplicationKeyResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    application_id: row.application_id,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    ...(row.created_by ? { created_by: row.created_by } : {}),
    ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
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

  /**
   * The keys of an application, oldest first, expired ones included (until they are deleted);
   * undefined when there is no such application.
   */
  async listKeys(tenantId: string, applicationId: string): Promise<ApplicationKeyResponse[] | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const [application, keys] = await Promise.all([
        client.query('SELECT 1 FROM applications WHERE tenant_id = $1 AND id = $2', [
          tenantId,
          applicationId,
        ]),
        client.query<KeyRow>(
          `SELECT ${keyColumns} FROM api_keys WHERE tenant_id = $1 AND application_id = $2
           ORDER BY created_at, id`,
          [tenantId, applicationId],
        ),
      ]);
      return application.rowCount === 0 ? undefined : keys.rows.map(toKeyResponse);
    });
  }

  async getKey(
    tenantId: string,
    applicationId: string,
    keyId: string,
  ): Promise<ApplicationKeyResponse | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<KeyRow>(
        `SELECT ${keyColumns} FROM api_keys WHERE tenant_id = $1 AND application_id = $2 AND id = $3`,
        [tenantId, applicationId, keyId],
      );
      return result.rows[0] && toKeyResponse(result.rows[0]);
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
