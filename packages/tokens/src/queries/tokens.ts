import { withTenant, type Pool } from '@tokenvault/platform';
import type { TokenResponse, TokenType } from '@tokenvault/contracts';

export interface TokenRow {
  tenant_id: string;
  id: string;
  type: TokenType;
  data_ciphertext: string;
  containers: string[];
  metadata: Record<string, string>;
  fingerprint: string;
  expires_at: Date | null;
  created_by: string;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
}

const live = '(expires_at IS NULL OR expires_at > now())';

/** The response fields of a token; `data` is added only by callers that opened it for a reader. */
export function tokenFields(row: Omit<TokenRow, 'data_ciphertext'>): TokenResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    containers: row.containers,
    metadata: row.metadata,
    fingerprint: row.fingerprint,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
  };
}

/** Reads run as the tenant: row-level security hides every other tenant's rows. */
export class TokenQueries {
  constructor(private readonly appPool: Pool) {}

  /** A live token (not deleted, not expired), or undefined. */
  async get(tenantId: string, id: string): Promise<TokenRow | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TokenRow>(
        `SELECT * FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${live}`,
        [tenantId, id],
      );
      return result.rows[0];
    });
  }

  /** The oldest live token with this fingerprint: what deduplication hands back. */
  async findByFingerprint(
    tenantId: string,
    type: TokenType,
    fingerprint: string,
  ): Promise<TokenRow | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TokenRow>(
        `SELECT * FROM tokens WHERE tenant_id = $1 AND type = $2 AND fingerprint = $3 AND ${live}
         ORDER BY created_at, id LIMIT 1`,
        [tenantId, type, fingerprint],
      );
      return result.rows[0];
    });
  }
}
