import type { KeyObject } from 'node:crypto';
import type { Queryable } from '@tokenvault/platform';

/**
 * A token's own key, wrapped by a version of its tenant's data key: a row of `token_keys`, never
 * part of an event. Destroying the row makes the token's data unreadable everywhere, the
 * immutable event log included (the forgettable-payload pattern).
 *
 * The writes are plain steps on any connection, so an event store composes them with its append:
 * - PostgreSQL: inside the append's transaction (the tokens context's write-side step), so the
 *   key and the event commit or roll back together;
 * - an external event store (KurrentDB), with no shared transaction: `storeNewTokenKey` BEFORE the
 *   append (`withdrawTokenKey` when it is refused) and `destroyTokenKey` AFTER it (the tokens
 *   context's `externalTokenKeyHook`). A crash between them leaves at worst a key with no
 *   token (an orphan, which `orphanTokenKeys` finds and the sweep removes) or a deleted token's
 *   key that outlives it until the delete is retried; never a token without its key.
 */
export interface StoredTokenKey extends WrappedTokenKey {
  tenantId: string;
  tokenId: string;
  /** The token's expiry: the sweep destroys the key once it has passed. */
  expiresAt: string | null;
}

/** A token's key as `token_keys` holds it. */
export interface WrappedTokenKey {
  /** The token key sealed by the tenant data key version below. */
  wrappedKey: string;
  tenantKeyVersion: number;
}

/**
 * The statement that stores token keys, its rows (tokenKeyRows) as one jsonb array, $1: an
 * existing key of a token is replaced, that is destroyed (re-encryption). An append's write-side
 * step may send it for several appends at once (group commit), so it is shared as text.
 */
export const storeTokenKeysStatement = {
  name: 'token_keys_store',
  text: `INSERT INTO token_keys (tenant_id, token_id, wrapped_key, tenant_key_version, expires_at)
     SELECT k.tenant_id, k.token_id, k.wrapped_key, k.tenant_key_version, k.expires_at
     FROM jsonb_to_recordset($1::jsonb)
       AS k(tenant_id uuid, token_id text, wrapped_key text, tenant_key_version integer, expires_at timestamptz)
     ON CONFLICT (tenant_id, token_id) DO UPDATE SET wrapped_key = EXCLUDED.wrapped_key,
       tenant_key_version = EXCLUDED.tenant_key_version, expires_at = EXCLUDED.expires_at, created_at = now()`,
} as const;

/** The rows of storeTokenKeysStatement. */
export const tokenKeyRows = (keys: readonly StoredTokenKey[]) =>
  keys.map((key) => ({
    tenant_id: key.tenantId,
    token_id: key.tokenId,
    wrapped_key: key.wrappedKey,
    tenant_key_version: key.tenantKeyVersion,
    expires_at: key.expiresAt,
  }));

/** Stores a token's key; an existing key of the token is replaced, that is destroyed (re-encryption). */
export async function storeTokenKey(db: Queryable, key: StoredTokenKey): Promise<void> {
  await db.query({ ...storeTokenKeysStatement, values: [JSON.stringify(tokenKeyRows([key]))] });
}

/**
 * Stores a token's first key, never replacing one (an external store's step before its append: the
 * append may still be refused). False when the token has a key already.
 */
export async function storeNewTokenKey(db: Queryable, key: StoredTokenKey): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO token_keys (tenant_id, token_id, wrapped_key, tenant_key_version, expires_at)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (tenant_id, token_id) DO NOTHING`,
    [key.tenantId, key.tokenId, key.wrappedKey, key.tenantKeyVersion, key.expiresAt],
  );
  return result.rowCount === 1;
}

/** Takes back a key stored for an append that was refused: only that key, never another's. */
export async function withdrawTokenKey(db: Queryable, key: StoredTokenKey): Promise<void> {
  await db.query('DELETE FROM token_keys WHERE tenant_id = $1 AND token_id = $2 AND wrapped_key = $3', [
    key.tenantId,
    key.tokenId,
    key.wrappedKey,
  ]);
}

export async function destroyTokenKey(db: Queryable, tenantId: string, tokenId: string): Promise<void> {
  await db.query('DELETE FROM token_keys WHERE tenant_id = $1 AND token_id = $2', [tenantId, tokenId]);
}

/** A token's new expiry (an update): the key goes when it passes. */
export async function setTokenKeyExpiry(
  db: Queryable,
  tenantId: string,
  tokenId: string,
  expiresAt: string | null,
): Promise<void> {
  await db.query('UPDATE token_keys SET expires_at = $3 WHERE tenant_id = $1 AND token_id = $2', [
    tenantId,
    tokenId,
    expiresAt,
  ]);
}

/** Destroys up to `limit` keys of tokens expired at `now`; returns whose they were. */
export async function destroyExpiredTokenKeys(
  db: Queryable,
  now: Date,
  limit: number,
): Promise<{ tenant_id: string; token_id: string }[]> {
  const result = await db.query<{ tenant_id: string; token_id: string }>(
    `DELETE FROM token_keys WHERE (tenant_id, token_id) IN (
       SELECT tenant_id, token_id FROM token_keys WHERE expires_at <= $1 LIMIT $2 FOR UPDATE SKIP LOCKED)
     RETURNING tenant_id, token_id`,
    [now, limit],
  );
  return result.rows;
}

/**
 * Keys stored before `olderThan` whose token the event store does not have: what a crash between
 * an external store's key write and its append leaves. Pages by (tenant_id, token_id) after `after`.
 */
export async function orphanTokenKeys(
  db: Queryable,
  options: {
    olderThan: Date;
    after?: { tenantId: string; tokenId: string };
    limit: number;
    tokenExists(tenantId: string, tokenId: string): Promise<boolean>;
  },
): Promise<{
  orphans: { tenantId: string; tokenId: string }[];
  last?: { tenantId: string; tokenId: string };
}> {
  const after = options.after ?? { tenantId: '00000000-0000-0000-0000-000000000000', tokenId: '' };
  const result = await db.query<{ tenant_id: string; token_id: string }>(
    `SELECT tenant_id, token_id FROM token_keys
     WHERE created_at < $1 AND (tenant_id, token_id) > ($2::uuid, $3)
     ORDER BY tenant_id, token_id LIMIT $4`,
    [options.olderThan, after.tenantId, after.tokenId, options.limit],
  );
  const orphans: { tenantId: string; tokenId: string }[] = [];
  for (const row of result.rows) {
    if (!(await options.tokenExists(row.tenant_id, row.token_id))) {
      orphans.push({ tenantId: row.tenant_id, tokenId: row.token_id });
    }
  }
  const lastRow = result.rows.at(-1);
  return {
    orphans,
    ...(lastRow ? { last: { tenantId: lastRow.tenant_id, tokenId: lastRow.token_id } } : {}),
  };
}

/**
 * A token's data sealed for an append (Vault.sealToken): the ciphertext the event carries and,
 * when the vault made a key for it, that key. The new key travels with the append that carries
 * the ciphertext, as its side data (never in the event, wrapped or not): the write-side step
 * stores the one its event's ciphertext names, inside the append's transaction.
 */
export interface SealedToken {
  ciphertext: string;
  /** Absent when an existing key sealed it (an update reuses the token's key). */
  newKey?: NewTokenKey;
}

/** A token key made for one ciphertext: its row, and the key itself (kept in memory once stored). */
export interface NewTokenKey extends StoredTokenKey {
  /** The ciphertext it sealed: the event whose data_ciphertext this is stores it. */
  sealed: string;
  unwrappedKey: KeyObject;
}

/** The invalidation every process's vault forgets a token's unwrapped key at. */
export const tokenKeyInvalidation = (tenantId: string, tokenId: string) => `token-key:${tenantId}/${tokenId}`;

export function tokenOfKeyInvalidation(key: string): { tenantId: string; tokenId: string } | undefined {
  if (!key.startsWith('token-key:')) return undefined;
  const rest = key.slice('token-key:'.length);
  const slash = rest.indexOf('/');
  return slash < 0 ? undefined : { tenantId: rest.slice(0, slash), tokenId: rest.slice(slash + 1) };
}
