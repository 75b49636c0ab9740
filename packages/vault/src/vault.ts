import { randomBytes, type KeyObject } from 'node:crypto';
import {
  ConfigError,
  LruCache,
  Problem,
  type Migration,
  type Pool,
  type Queryable,
} from '@tokenvault/platform';
import { canonicalJson, hmac, open, seal, secretKeyOf } from './crypto.ts';
import type { MasterKeyring } from './keyring.ts';
import type { NewTokenKey, SealedToken, WrappedTokenKey } from './token-keys.ts';

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
  {
    id: 'vault/002_key_versions_and_token_keys',
    // Keys from before this migration are version 1 of their tenant, wrapped by the master key
    // that MASTER_KEY still supplies as the ring's "default" version.
    sql: `
      ALTER TABLE tenant_keys
        ADD COLUMN version integer NOT NULL DEFAULT 1,
        ADD COLUMN kek_id text NOT NULL DEFAULT 'default',
        ADD COLUMN retired_at timestamptz;
      ALTER TABLE tenant_keys DROP CONSTRAINT tenant_keys_pkey, ADD PRIMARY KEY (tenant_id, version);
      CREATE INDEX tenant_keys_kek ON tenant_keys (kek_id);
      CREATE TABLE token_keys (
        tenant_id uuid NOT NULL,
        token_id text NOT NULL,
        wrapped_key text NOT NULL,
        tenant_key_version integer NOT NULL,
        expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tenant_id, token_id)
      );
      CREATE INDEX token_keys_expiry ON token_keys (expires_at) WHERE expires_at IS NOT NULL;
      CREATE INDEX token_keys_version ON token_keys (tenant_id, tenant_key_version);
      REVOKE ALL ON token_keys FROM PUBLIC;
    `,
  },
  {
    id: 'vault/003_token_keys_read_with_their_tokens',
    // The app role reads its tenant's wrapped token keys with the token rows, so opening a token
    // needs no query of its own. A wrapped key is ciphertext under a tenant data key, which stays
    // in tenant_keys (owner role only) wrapped by the master key: the app role still holds no key
    // that opens anything. Writes and the sweep stay the owner role's (it owns the table, so the
    // policy does not apply to it). The version index goes: on a table not analyzed yet the
    // planner took it, as cheap as the primary key, for the join's lookups (a scan of the
    // tenant's keys per token); rotation walks the primary key instead.
    sql: `
      DROP INDEX token_keys_version;
      ALTER TABLE token_keys ENABLE ROW LEVEL SECURITY;
      CREATE POLICY tenant_isolation ON token_keys
        USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
      GRANT SELECT (tenant_id, token_id, wrapped_key, tenant_key_version) ON token_keys TO {{app_role}};
    `,
  },
];

/**
 * Crypto-shredding inside the caller's transaction: the one that appends the tenant's deletion
 * (tenancy's key-shredding step), so the keys go atomically with the write.
 */
export async function destroyTenantKeysWithin(tx: Queryable, tenantId: string): Promise<void> {
  await tx.query('DELETE FROM token_keys WHERE tenant_id = $1', [tenantId]);
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

/** The token's key was destroyed (deleted, expired): the token answers as a deleted one. */
export class TokenKeyDestroyedError extends Problem {
  constructor() {
    super(404, 'not-found', 'Not Found', 'No token with this id.');
    this.name = 'TokenKeyDestroyedError';
  }
}

/** What associated data binds each wrapped key to (version 1 keeps the AD of before versions). */
const dataKeyAd = (tenantId: string, version: number) =>
  version === 1 ? `data-key:${tenantId}` : `data-key:${tenantId}:${version}`;
const fingerprintKeyAd = (tenantId: string, version: number) =>
  version === 1 ? `fingerprint-key:${tenantId}` : `fingerprint-key:${tenantId}:${version}`;
export const tokenKeyAd = (tenantId: string, tokenId: string) => `token-key:${tenantId}:${tokenId}`;

/** Sealed data: `tk:` under the token's own key; `k<n>:` under tenant data key version n; bare: version 1. */
const tokenKeyPrefix = 'tk:';
const versionPrefix = /^k(\d+):/;

export interface TenantKeyRow {
  tenant_id: string;
  version: number;
  kek_id: string;
  wrapped_data_key: string;
  wrapped_fingerprint_key: string;
  retired_at: Date | null;
}

interface TenantKeys {
  /** The version that wraps new token keys. */
  current: number;
  dataKeys: Map<number, KeyObject>;
  fingerprintKey: KeyObject;
}

export interface VaultOptions {
  /** Unwrapped token keys kept in memory (LRU). Default 10 000; 0 keeps none. */
  tokenKeyCacheSize?: number;
  /** How long one stays. Default 5 minutes. */
  tokenKeyCacheTtlMs?: number;
  /** false: tokens are sealed under the tenant key (TOKEN_KEYS=off, comparison benchmarks only). */
  perTokenKeys?: boolean;
}

/**
 * Envelope encryption in three levels: the master keyring wraps each tenant's (versioned) data
 * and fingerprint keys; a tenant data key wraps each token's own key (table token_keys, apart
 * from the events); the token key seals the token's data, bound to tenant and token id. Deleting
 * a token destroys its key, deleting a tenant its keys: what they sealed is unreadable, in the
 * event log too (crypto-shredding). docs/key-management.md.
 */
export class Vault {
  readonly ring: MasterKeyring;
  private readonly keys = new Map<string, Promise<TenantKeys>>();
  private readonly tokenKeys: LruCache<KeyObject>;
  private readonly pool: Pool;
  private readonly perTokenKeys: boolean;

  constructor(pool: Pool, ring: MasterKeyring, options: VaultOptions = {}) {
    this.pool = pool;
    this.ring = ring;
    this.perTokenKeys = options.perTokenKeys ?? true;
    this.tokenKeys = new LruCache({
      maxEntries: options.tokenKeyCacheSize ?? 10_000,
      ttlMs: options.tokenKeyCacheTtlMs ?? 300_000,
    });
  }

  /**
   * Refuses to start (a ConfigError naming it) when stored tenant keys are wrapped by a master key
   * version this process's ring lacks: never a 500 at run time.
   */
  async assertRingCoversStoredKeys(): Promise<void> {
    const result = await this.pool.query<{ kek_id: string; count: string }>(
      'SELECT kek_id, count(*) AS count FROM tenant_keys GROUP BY kek_id ORDER BY kek_id',
    );
    const missing = result.rows.filter((row) => !this.ring.versions.includes(row.kek_id));
    if (missing.length) {
      throw new ConfigError(
        missing.map(
          (row) =>
            `master key version "${row.kek_id}" wraps ${row.count} stored tenant key(s) but the ${this.ring.provider} keyring lacks it (has: ${this.ring.versions.join(', ')}): add it to ${this.ring.provider === 'pkcs11' ? 'PKCS11_KEY_LABELS' : 'MASTER_KEYS'}, or run \`npm run keys -- rewrap\` with a ring that has it first`,
        ),
      );
    }
  }

  /** Idempotent: a tenant keeps the keys it was given first. */
  async createTenantKeys(tenantId: string): Promise<void> {
    const kek = this.ring.primary;
    await this.pool.query(
      `INSERT INTO tenant_keys (tenant_id, version, kek_id, wrapped_data_key, wrapped_fingerprint_key)
       VALUES ($1, 1, $2, $3, $4) ON CONFLICT (tenant_id, version) DO NOTHING`,
      [
        tenantId,
        kek,
        await this.ring.wrap(kek, randomBytes(32), dataKeyAd(tenantId, 1)),
        await this.ring.wrap(kek, randomBytes(32), fingerprintKeyAd(tenantId, 1)),
      ],
    );
  }

  /** Sealed under the tenant's current data key (reactor configurations, run requests). */
  async encrypt(tenantId: string, subjectId: string, value: unknown): Promise<string> {
    const keys = await this.tenantKeys(tenantId);
    const sealed = seal(keys.dataKeys.get(keys.current)!, plaintextOf(value), `${tenantId}:${subjectId}`);
    return keys.current === 1 ? sealed : `k${keys.current}:${sealed}`;
  }

  /**
   * Seals a token's data under a key of its own. `reuseKeyOf`: the token's current ciphertext, whose
   * key seals the new data too (an update); otherwise (a create, a re-encryption, an update of a
   * token sealed before token keys) a new key, which the append that carries the ciphertext
   * stores: it goes with that append as its side data (SealedToken). Nothing is kept here.
   */
  async sealToken(
    tenantId: string,
    tokenId: string,
    value: unknown,
    options: { reuseKeyOf?: string; expiresAt?: string | null } = {},
  ): Promise<SealedToken> {
    const ad = `${tenantId}:${tokenId}`;
    if (!this.perTokenKeys) return { ciphertext: await this.encrypt(tenantId, tokenId, value) };
    if (options.reuseKeyOf?.startsWith(tokenKeyPrefix)) {
      return {
        ciphertext: tokenKeyPrefix + seal(await this.tokenKey(tenantId, tokenId), plaintextOf(value), ad),
      };
    }
    const keys = await this.tenantKeys(tenantId);
    const tokenKeyBytes = randomBytes(32);
    const tokenKey = secretKeyOf(tokenKeyBytes);
    const ciphertext = tokenKeyPrefix + seal(tokenKey, plaintextOf(value), ad);
    const newKey: NewTokenKey = {
      sealed: ciphertext,
      tenantId,
      tokenId,
      wrappedKey: seal(keys.dataKeys.get(keys.current)!, tokenKeyBytes, tokenKeyAd(tenantId, tokenId)),
      tenantKeyVersion: keys.current,
      expiresAt: options.expiresAt ?? null,
      unwrappedKey: tokenKey,
    };
    return { ciphertext, newKey };
  }

  /**
   * The append that carried a new key stored it: the key stays in memory, so that reading the
   * token back needs no query for its key.
   */
  keepTokenKey(key: NewTokenKey): void {
    this.tokenKeys.set(tokenCacheKey(key.tenantId, key.tokenId), key.unwrappedKey);
  }

  /**
   * `storedKey`: the token's key as its read-model row came with it (null: the row had none, the
   * key is destroyed), so that a key not in memory needs no query; without it, the key is read.
   */
  async decrypt(
    tenantId: string,
    subjectId: string,
    sealed: string,
    storedKey?: WrappedTokenKey | null,
  ): Promise<unknown> {
    const ad = `${tenantId}:${subjectId}`;
    if (sealed.startsWith(tokenKeyPrefix)) {
      const body = sealed.slice(tokenKeyPrefix.length);
      const cached = this.tokenKeys.get(tokenCacheKey(tenantId, subjectId));
      if (cached) {
        try {
          return JSON.parse(open(cached, body, ad).toString('utf8'));
        } catch {
          // Replaced (re-encrypted) since it was cached, and the NOTIFY is not here yet.
          this.forgetToken(tenantId, subjectId);
        }
      }
      const key =
        storedKey === undefined
          ? await this.tokenKey(tenantId, subjectId)
          : await this.unwrapStoredTokenKey(tenantId, subjectId, storedKey);
      return JSON.parse(open(key, body, ad).toString('utf8'));
    }
    const match = versionPrefix.exec(sealed);
    const version = match ? Number(match[1]) : 1;
    const keys = await this.tenantKeys(tenantId);
    const dataKey = keys.dataKeys.get(version);
    if (!dataKey) throw new TenantKeysUnavailableError(tenantId);
    return JSON.parse(open(dataKey, match ? sealed.slice(match[0].length) : sealed, ad).toString('utf8'));
  }

  /** Keyed per tenant, so equal data in two tenants has unrelated fingerprints. */
  async fingerprint(tenantId: string, kind: string, value: unknown): Promise<string> {
    const { fingerprintKey } = await this.tenantKeys(tenantId);
    return hmac(fingerprintKey, `${kind}\u0000${canonicalJson(value)}`);
  }

  /** Forgets unwrapped keys held in memory: after a tenant's keys were destroyed or rotated, or all (null). */
  forget(tenantId: string | null): void {
    if (tenantId === null) {
      this.keys.clear();
      this.tokenKeys.clear();
    } else {
      this.keys.delete(tenantId);
      this.tokenKeys.deletePrefix(tokenCacheKey(tenantId, ''));
    }
  }

  /** Forgets a token's unwrapped key: its key was destroyed or replaced. */
  forgetToken(tenantId: string, tokenId: string): void {
    this.tokenKeys.delete(tokenCacheKey(tenantId, tokenId));
  }

  /** How many unwrapped token keys this process holds (metrics, tests). */
  get cachedTokenKeys(): number {
    return this.tokenKeys.size;
  }

  private async tokenKey(tenantId: string, tokenId: string): Promise<KeyObject> {
    const cached = this.tokenKeys.get(tokenCacheKey(tenantId, tokenId));
    if (cached) return cached;
    const result = await this.pool.query<{ wrapped_key: string; tenant_key_version: number }>({
      name: 'token_keys_by_id',
      text: 'SELECT wrapped_key, tenant_key_version FROM token_keys WHERE tenant_id = $1 AND token_id = $2',
      values: [tenantId, tokenId],
    });
    const row = result.rows[0];
    return this.unwrapStoredTokenKey(
      tenantId,
      tokenId,
      row ? { wrappedKey: row.wrapped_key, tenantKeyVersion: row.tenant_key_version } : null,
    );
  }

  /** A stored token key unwrapped by its tenant data key, and kept in memory. */
  private async unwrapStoredTokenKey(
    tenantId: string,
    tokenId: string,
    stored: WrappedTokenKey | null,
  ): Promise<KeyObject> {
    if (!stored) throw new TokenKeyDestroyedError();
    const dataKey = (await this.tenantKeys(tenantId)).dataKeys.get(stored.tenantKeyVersion);
    if (!dataKey) throw new TenantKeysUnavailableError(tenantId);
    const key = secretKeyOf(open(dataKey, stored.wrappedKey, tokenKeyAd(tenantId, tokenId)));
    this.tokenKeys.set(tokenCacheKey(tenantId, tokenId), key);
    return key;
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
    const result = await this.pool.query<TenantKeyRow>(
      'SELECT * FROM tenant_keys WHERE tenant_id = $1 ORDER BY version',
      [tenantId],
    );
    if (result.rows.length === 0) throw new TenantKeysUnavailableError(tenantId);
    return unwrapTenantKeys(this.ring, tenantId, result.rows);
  }
}

/** A token's entry in the cache of unwrapped token keys; a tenant's entries share its prefix (forget). */
const tokenCacheKey = (tenantId: string, tokenId: string) => `${tenantId}/${tokenId}`;

const plaintextOf = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');

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
      secretKeyOf(await ring.unwrap(row.kek_id, row.wrapped_data_key, dataKeyAd(tenantId, row.version))),
    );
  }
  const live = rows.filter((row) => row.retired_at === null);
  const current = (live.at(-1) ?? rows.at(-1)!).version;
  const currentRow = rows.find((row) => row.version === current)!;
  return {
    current,
    dataKeys,
    fingerprintKey: secretKeyOf(
      await ring.unwrap(
        currentRow.kek_id,
        currentRow.wrapped_fingerprint_key,
        fingerprintKeyAd(tenantId, current),
      ),
    ),
  };
}

/** For rotation: the associated data each wrapped tenant key is bound to. */
export const tenantKeyAd = { data: dataKeyAd, fingerprint: fingerprintKeyAd };
