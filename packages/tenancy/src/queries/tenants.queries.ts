import { withTenant, type Pool } from '@tokenvault/platform';
import type { TenantResponse } from '@tokenvault/contracts';

interface TenantRow {
  id: string;
  owner_id: string;
  name: string;
  settings: TenantResponse['settings'];
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

export async function getTenant(appPool: Pool, tenantId: string): Promise<TenantResponse | undefined> {
  return withTenant(appPool, tenantId, async (client) => {
    const result = await client.query<TenantRow>(
      'SELECT id, owner_id, name, settings, created_by, created_at, modified_by, modified_at FROM tenants WHERE id = $1',
      [tenantId],
    );
    const row = result.rows[0];
    if (!row) return undefined;
    return {
      id: row.id,
      owner_id: row.owner_id,
      name: row.name,
      settings: row.settings,
      ...(row.created_by ? { created_by: row.created_by } : {}),
      ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
      ...(row.modified_by ? { modified_by: row.modified_by } : {}),
      ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
    };
  });
}
