import type { KeyObject } from 'node:crypto';
import type { Queryable } from '@tokenvault/platform';
import { tenantKeyAd } from './associated-data.ts';
import { searchKeyOf, secretKeyOf } from './crypto.ts';
import type { MasterKeyring } from './keyring.ts';

/** A version of a tenant's keys as `tenant_keys` holds it: wrapped by a master key version. */
export interface TenantKeyRow {
  tenant_id: string;
  version: number;
  kek_id: string;
  wrapped_data_key: string;
  wrapped_fingerprint_key: string;
  retired_at: Date | null;
}

/** A tenant's keys, unwrapped. */
export interface TenantKeys {
  /** The version that wraps new token keys. */
  current: number;
  dataKeys: Map<number, KeyObject>;
  fingerprintKey: KeyObject;
  /**
   * The blind-index key of search indexes: derived from the fingerprint key (HKDF, its own
   * purpose), so it lives, rotates and is shredded with it and is never stored anywhere.
   */
  searchKey: KeyObject;
}

/** Every version of a tenant's keys, unwrapped; the newest unretired one is current. */
export async function unwrapTenantKeys(
  ring: MasterKeyring,
  tenantId: string,
  rows: readonly TenantKeyRow[],
): Promise<TenantKeys> {
  const dataKeys = new Map<number, KeyObject>();
  for (const row of rows) {
    dataKeys.set(
      row.version,
      secretKeyOf(
        await ring.unwrap(row.kek_id, row.wrapped_data_key, tenantKeyAd.data(tenantId, row.version)),
      ),
    );
  }
  const live = rows.filter((row) => row.retired_at === null);
  const current = (live.at(-1) ?? rows.at(-1)!).version;
  const currentRow = rows.find((row) => row.version === current)!;
  const fingerprintKeyBytes = await ring.unwrap(
    currentRow.kek_id,
    currentRow.wrapped_fingerprint_key,
    tenantKeyAd.fingerprint(tenantId, current),
  );
  return {
    current,
    dataKeys,
    fingerprintKey: secretKeyOf(fingerprintKeyBytes),
    searchKey: searchKeyOf(fingerprintKeyBytes, tenantId),
  };
}

/**
 * Crypto-shredding inside the caller's transaction: the one that appends the tenant's deletion
 * (tenancy's key-shredding step), so the keys go atomically with the write.
 */
export async function destroyTenantKeysWithin(tx: Queryable, tenantId: string): Promise<void> {
  await tx.query('DELETE FROM token_keys WHERE tenant_id = $1', [tenantId]);
  await tx.query('DELETE FROM tenant_keys WHERE tenant_id = $1', [tenantId]);
}
