import { unauthorized, type Authenticate, type ContainerRule, type Pool } from '@tokenvault/platform';
import { hashApiKey, looksLikeApiKey } from '../domain/api-key.ts';

interface PrincipalRow {
  tenant_id: string;
  application_id: string;
  permissions: string[];
  rules: ContainerRule[];
  settings: Record<string, string>;
}

/**
 * Resolves SVC-API-KEY to its tenant, application and grants. Only the key's SHA-256 digest is
 * looked up (fixed length, indexed); a deleted application's key row is gone, so it fails at once.
 */
export function createAuthenticator(ownerPool: Pool): Authenticate {
  return async (apiKey) => {
    if (!apiKey || !looksLikeApiKey(apiKey)) throw unauthorized();
    const result = await ownerPool.query<PrincipalRow>(
      `SELECT k.tenant_id, k.application_id, a.permissions, a.rules, t.settings
       FROM api_keys k
       JOIN applications a ON a.tenant_id = k.tenant_id AND a.id = k.application_id
       JOIN tenants t ON t.id = k.tenant_id
       WHERE k.key_hash = $1`,
      [hashApiKey(apiKey)],
    );
    const row = result.rows[0];
    if (!row) throw unauthorized();
    return {
      tenantId: row.tenant_id,
      actorId: row.application_id,
      actorType: 'application',
      permissions: new Set(row.permissions),
      rules: row.rules,
      tenantSettings: row.settings,
    };
  };
}
