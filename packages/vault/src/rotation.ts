import { randomBytes } from 'node:crypto';
import { withTransaction, type Pool } from '@tokenvault/platform';
import { open, seal } from './crypto.ts';
import type { MasterKeyring } from './keyring.ts';
import { tenantKeyAd, tokenKeyAd } from './associated-data.ts';
import { unwrapTenantKeys, type TenantKeyRow } from './tenant-keys.ts';

export interface KeyStatus {
  provider: string;
  primary: string;
  tenant_keys_by_kek: Record<string, number>;
  token_keys: number;
}

export async function keyStatus(pool: Pool, ring: MasterKeyring): Promise<KeyStatus> {
  const byKek = await pool.query<{ kek_id: string; count: string }>(
    'SELECT kek_id, count(*) AS count FROM tenant_keys GROUP BY kek_id ORDER BY kek_id',
  );
  const tokens = await pool.query<{ count: string }>('SELECT count(*) AS count FROM token_keys');
  return {
    provider: ring.provider,
    primary: ring.primary,
    tenant_keys_by_kek: Object.fromEntries(byKek.rows.map((row) => [row.kek_id, Number(row.count)])),
    token_keys: Number(tokens.rows[0]!.count),
  };
}

/** Tenant key rows still wrapped by another master key version than the primary. */
export async function tenantKeysToRewrap(pool: Pool, ring: MasterKeyring): Promise<number> {
  const result = await pool.query<{ count: string }>(
    'SELECT count(*) AS count FROM tenant_keys WHERE kek_id <> $1',
    [ring.primary],
  );
  return Number(result.rows[0]!.count);
}

/**
 * Re-wraps up to `limit` tenant key rows under the primary master key, in one transaction; online
 * (rows are locked one batch at a time, readers go on with the old wrapping until it commits) and
 * resumable (each batch commits on its own; the next run picks up what is left). Returns the
 * tenants whose rows it re-wrapped (an empty list: nothing left).
 */
export async function rewrapBatch(
  pool: Pool,
  ring: MasterKeyring,
  limit: number,
): Promise<{ tenantId: string; version: number; from: string }[]> {
  return withTransaction(pool, async (tx) => {
    const rows = await tx.query<TenantKeyRow>(
      `SELECT * FROM tenant_keys WHERE kek_id <> $1 ORDER BY tenant_id, version LIMIT $2 FOR UPDATE SKIP LOCKED`,
      [ring.primary, limit],
    );
    for (const row of rows.rows) {
      const data = await ring.unwrap(
        row.kek_id,
        row.wrapped_data_key,
        tenantKeyAd.data(row.tenant_id, row.version),
      );
      const fingerprint = await ring.unwrap(
        row.kek_id,
        row.wrapped_fingerprint_key,
        tenantKeyAd.fingerprint(row.tenant_id, row.version),
      );
      await tx.query(
        `UPDATE tenant_keys SET kek_id = $3, wrapped_data_key = $4, wrapped_fingerprint_key = $5
         WHERE tenant_id = $1 AND version = $2`,
        [
          row.tenant_id,
          row.version,
          ring.primary,
          await ring.wrap(ring.primary, data, tenantKeyAd.data(row.tenant_id, row.version)),
          await ring.wrap(ring.primary, fingerprint, tenantKeyAd.fingerprint(row.tenant_id, row.version)),
        ],
      );
    }
    return rows.rows.map((row) => ({ tenantId: row.tenant_id, version: row.version, from: row.kek_id }));
  });
}

/**
 * Gives a tenant a new data key version, wrapped by the primary master key: it wraps the tenant's
 * token keys from now on, and the versions before it are retired (they wrap nothing new; they
 * still open what was sealed directly under them before token keys existed). The fingerprint key
 * stays (deduplication must keep finding equal data); it is re-wrapped with the new version.
 */
export async function addTenantKeyVersion(
  pool: Pool,
  ring: MasterKeyring,
  tenantId: string,
): Promise<{ version: number; previous: number } | undefined> {
  return withTransaction(pool, async (tx) => {
    const rows = await tx.query<TenantKeyRow>(
      'SELECT * FROM tenant_keys WHERE tenant_id = $1 ORDER BY version FOR UPDATE',
      [tenantId],
    );
    if (rows.rows.length === 0) return undefined;
    const keys = await unwrapTenantKeys(ring, tenantId, rows.rows);
    const version = rows.rows.at(-1)!.version + 1;
    await tx.query('UPDATE tenant_keys SET retired_at = now() WHERE tenant_id = $1 AND retired_at IS NULL', [
      tenantId,
    ]);
    await tx.query(
      `INSERT INTO tenant_keys (tenant_id, version, kek_id, wrapped_data_key, wrapped_fingerprint_key)
       VALUES ($1, $2, $3, $4, $5)`,
      [
        tenantId,
        version,
        ring.primary,
        await ring.wrap(ring.primary, randomBytes(32), tenantKeyAd.data(tenantId, version)),
        await ring.wrap(
          ring.primary,
          keys.fingerprintKey.export(),
          tenantKeyAd.fingerprint(tenantId, version),
        ),
      ],
    );
    return { version, previous: keys.current };
  });
}

/**
 * Re-wraps up to `limit` of the tenant's token keys still wrapped by an older data key version
 * under its current one, in one transaction, the next ones by token id after `after` (a pass walks
 * the primary key once: no index on the version, which would compete with the primary key for
 * the read path's lookups). Returns how many, and the cursor of the next batch (none: pass done).
 * A key being written meanwhile is waited for, not skipped, so a pass misses none.
 */
export async function rewrapTokenKeysBatch(
  pool: Pool,
  ring: MasterKeyring,
  tenantId: string,
  limit: number,
  after = '',
): Promise<{ rewrapped: number; next?: string }> {
  return withTransaction(pool, async (tx) => {
    const tenantRows = await tx.query<TenantKeyRow>(
      'SELECT * FROM tenant_keys WHERE tenant_id = $1 ORDER BY version',
      [tenantId],
    );
    if (tenantRows.rows.length === 0) return { rewrapped: 0 };
    const keys = await unwrapTenantKeys(ring, tenantId, tenantRows.rows);
    const current = keys.dataKeys.get(keys.current)!;
    const rows = await tx.query<{ token_id: string; wrapped_key: string; tenant_key_version: number }>(
      `SELECT token_id, wrapped_key, tenant_key_version FROM token_keys
       WHERE tenant_id = $1 AND token_id > $4 AND tenant_key_version <> $2
       ORDER BY token_id LIMIT $3 FOR UPDATE`,
      [tenantId, keys.current, limit, after],
    );
    if (rows.rows.length === 0) return { rewrapped: 0 };
    const ids: string[] = [];
    const wrapped: string[] = [];
    for (const row of rows.rows) {
      const ad = tokenKeyAd(tenantId, row.token_id);
      ids.push(row.token_id);
      wrapped.push(seal(current, open(keys.dataKeys.get(row.tenant_key_version)!, row.wrapped_key, ad), ad));
    }
    await tx.query(
      `UPDATE token_keys SET wrapped_key = batch.wrapped_key, tenant_key_version = $2
       FROM unnest($3::text[], $4::text[]) AS batch(token_id, wrapped_key)
       WHERE token_keys.tenant_id = $1 AND token_keys.token_id = batch.token_id`,
      [tenantId, keys.current, ids, wrapped],
    );
    return { rewrapped: rows.rows.length, next: ids.at(-1)! };
  });
}

/** Every tenant with keys, in pages (rotate-tenant --all). */
export async function tenantsWithKeys(pool: Pool, after: string | null, limit: number): Promise<string[]> {
  const result = await pool.query<{ tenant_id: string }>(
    `SELECT DISTINCT tenant_id FROM tenant_keys WHERE $1::uuid IS NULL OR tenant_id > $1::uuid
     ORDER BY tenant_id LIMIT $2`,
    [after, limit],
  );
  return result.rows.map((row) => row.tenant_id);
}

/**
 * One pass over the tenant's token keys, batch after batch (`rewrapTokenKeysBatch`): every key
 * still wrapped by an older data key version is re-wrapped under the current one. Returns how many.
 */
export async function rewrapTokenKeys(
  pool: Pool,
  ring: MasterKeyring,
  tenantId: string,
  batchSize: number,
): Promise<number> {
  let rewrapped = 0;
  let next: string | undefined = '';
  while (next !== undefined) {
    const batch = await rewrapTokenKeysBatch(pool, ring, tenantId, batchSize, next);
    rewrapped += batch.rewrapped;
    next = batch.next;
  }
  return rewrapped;
}
