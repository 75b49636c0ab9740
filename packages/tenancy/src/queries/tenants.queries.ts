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

/**
 * The tenants of this name whose owner is the user of this address, oldest first: what a second
 * bootstrap with the same name and owner would duplicate. Across tenants, so on the owner's pool
 * (an operator's command, never a route).
 */
export async function tenantsNamedAndOwnedBy(
  ownerPool: Pool,
  input: { tenantName: string; ownerEmail: string },
): Promise<string[]> {
  const result = await ownerPool.query<{ id: string }>(
    `SELECT t.id FROM tenants t JOIN users u ON u.id = t.owner_id
      WHERE t.name = $1 AND lower(u.email) = lower($2) ORDER BY t.created_at, t.id`,
    [input.tenantName, input.ownerEmail.trim()],
  );
  return result.rows.map((row) => row.id);
}
