import { randomBytes } from 'node:crypto';
import { Problem, type Migration, type Pool, type Queryable } from '@tokenvault/platform';
import { canonicalJson, hmac, open, seal } from './crypto.ts';

export const vaultMigrations: Migration[] = [
  {
    id: 'vault/001_tenant_keys',
    // Only the owner role reads this table: the app role never sees wrapped keys.
    sql: `
      CREATE TABLE tenant_keys (
        tenant_id uuid PRIMARY KEY,
        wrapped_data_key text NOT NULL,
        wrapped_fingerprint_key text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      REVOKE ALL ON tenant_keys FROM PUBLIC;
    `,
  },
];

/**
 * Crypto-shredding inside the caller's transaction: the one that appends the tenant's deletion
 * (tenancy's key-shredding step), so the keys go atomically with the write.
 */
export async function destroyTenantKeysWithin(tx: Queryable, tenantId: string): Promise<void> {
  await tx.query('DELETE FROM tenant_keys WHERE tenant_id = $1', [tenantId]);
}

/**
 * A 401 where it reaches a client: a key of a tenant deleted a moment ago (and not yet forgotten
 * by every process's caches) is a key of no tenant.
 */
export class TenantKeysUnavailableError extends Problem {
  readonly tenantId: string;
  constructor(tenantId: string) {
    super(401, 'unauthorized', 'Unauthorized', 'The tenant of this API key no longer exists.');
    this.tenantId = tenantId;
    this.name = 'TenantKeysUnavailableError';
  }
}

interface TenantKeys {
  dataKey: Buffer;
  fingerprintKey: Buffer;
}

/**
 * Envelope encryption: each tenant has a data key and a fingerprint key, both wrapped by the
 * master key and bound to the tenant id. Token data is sealed with the data key and bound to
 * tenant and token id, so a ciphertext moved to another token or tenant does not open. Deleting
 * a tenant deletes its keys: everything sealed with them is unreadable (crypto-shredding).
 */
export class Vault {
  private readonly keys = new Map<string, Promise<TenantKeys>>();
  private readonly masterKey: Buffer;

  private readonly pool: Pool;
  constructor(pool: Pool, masterKeyBase64: string) {
    this.pool = pool;
    this.masterKey = Buffer.from(masterKeyBase64, 'base64');
    if (this.masterKey.length !== 32) throw new Error('the master key must be 32 bytes');
  }

  /** Idempotent: a tenant keeps the keys it was given first. */
  async createTenantKeys(tenantId: string): Promise<void> {
    await this.pool.query(
      `INSERT INTO tenant_keys (tenant_id, wrapped_data_key, wrapped_fingerprint_key)
       VALUES ($1, $2, $3) ON CONFLICT (tenant_id) DO NOTHING`,
      [
        tenantId,
        seal(this.masterKey, randomBytes(32), `data-key:${tenantId}`),
        seal(this.masterKey, randomBytes(32), `fingerprint-key:${tenantId}`),
      ],
    );
  }

  async encrypt(tenantId: string, subjectId: string, value: unknown): Promise<string> {
    const { dataKey } = await this.tenantKeys(tenantId);
    return seal(dataKey, Buffer.from(JSON.stringify(value), 'utf8'), `${tenantId}:${subjectId}`);
  }

  async decrypt(tenantId: string, subjectId: string, sealed: string): Promise<unknown> {
    const { dataKey } = await this.tenantKeys(tenantId);
    return JSON.parse(open(dataKey, sealed, `${tenantId}:${subjectId}`).toString('utf8'));
  }

  /** Keyed per tenant, so equal data in two tenants has unrelated fingerprints. */
  async fingerprint(tenantId: string, kind: string, value: unknown): Promise<string> {
    const { fingerprintKey } = await this.tenantKeys(tenantId);
    return hmac(fingerprintKey, `${kind}\u0000${canonicalJson(value)}`);
  }

  /** Forgets unwrapped keys held in memory: after a tenant's keys were destroyed, or all (null). */
  forget(tenantId: string | null): void {
    if (tenantId === null) this.keys.clear();
    else this.keys.delete(tenantId);
  }

  private tenantKeys(tenantId: string): Promise<TenantKeys> {
    let keys = this.keys.get(tenantId);
    if (!keys) {
      keys = this.loadTenantKeys(tenantId);
      this.keys.set(tenantId, keys);
      keys.catch(() => this.keys.delete(tenantId));
    }
    return keys;
  }

  private async loadTenantKeys(tenantId: string): Promise<TenantKeys> {
    const result = await this.pool.query<{ wrapped_data_key: string; wrapped_fingerprint_key: string }>(
      'SELECT wrapped_data_key, wrapped_fingerprint_key FROM tenant_keys WHERE tenant_id = $1',
      [tenantId],
    );
    const row = result.rows[0];
    if (!row) throw new TenantKeysUnavailableError(tenantId);
    return {
      dataKey: open(this.masterKey, row.wrapped_data_key, `data-key:${tenantId}`),
      fingerprintKey: open(this.masterKey, row.wrapped_fingerprint_key, `fingerprint-key:${tenantId}`),
    };
  }
}
