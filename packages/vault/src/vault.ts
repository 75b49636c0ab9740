import { randomBytes, type KeyObject } from 'node:crypto';
import { ConfigError, type Pool } from '@tokenvault/platform';
import { tenantKeyAd, tokenKeyAd } from './associated-data.ts';
import { canonicalJson, hmac, open, seal, secretKeyOf } from './crypto.ts';
import { TenantKeyCache, TokenKeyCache } from './key-caches.ts';
import type { MasterKeyring } from './keyring.ts';
import { unwrapTenantKeys, type TenantKeyRow, type TenantKeys } from './tenant-keys.ts';
import type { NewTokenKey, SealedToken, WrappedTokenKey } from './token-keys.ts';
import { TenantKeysUnavailableError, TokenKeyDestroyedError } from './vault-errors.ts';

/** Sealed data: `tk:` under the token's own key; `k<n>:` under tenant data key version n; bare: version 1. */
const tokenKeyPrefix = 'tk:';
const versionPrefix = /^k(\d+):/;

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
  private readonly keys = new TenantKeyCache();
  private readonly tokenKeys: TokenKeyCache;
  private readonly pool: Pool;
  private readonly perTokenKeys: boolean;

  constructor(pool: Pool, ring: MasterKeyring, options: VaultOptions = {}) {
    this.pool = pool;
    this.ring = ring;
    this.perTokenKeys = options.perTokenKeys ?? true;
    this.tokenKeys = new TokenKeyCache({
      maxEntries: options.tokenKeyCacheSize ?? 10_000,
      ttlMs: options.tokenKeyCacheTtlMs ?? 300_000,
    });
  }

  /**
   * Refuses to start (a ConfigError naming it) when stored tenant keys are wrapped by a master key
   * version this process's ring lacks, or holds under that name another key than the one that
   * wrapped them (a restore with the wrong keyring: MASTER_KEY is always version "default"), found
   * by unwrapping one stored key per version: never a 500 at run time.
   */
  async assertRingCoversStoredKeys(): Promise<void> {
    const result = await this.pool.query<{
      kek_id: string;
      count: string;
      tenant_id: string;
      version: number;
      wrapped_data_key: string;
    }>(
      `SELECT DISTINCT ON (kek_id) kek_id, count(*) OVER (PARTITION BY kek_id) AS count,
              tenant_id, version, wrapped_data_key
         FROM tenant_keys ORDER BY kek_id, tenant_id, version`,
    );
    const variable = this.ring.provider === 'pkcs11' ? 'PKCS11_KEY_LABELS' : 'MASTER_KEYS (or MASTER_KEY)';
    const problems: string[] = [];
    for (const row of result.rows) {
      if (!this.ring.versions.includes(row.kek_id)) {
        problems.push(
          `master key version "${row.kek_id}" wraps ${row.count} stored tenant key(s) but the ${this.ring.provider} keyring lacks it (has: ${this.ring.versions.join(', ')}): add it to ${this.ring.provider === 'pkcs11' ? 'PKCS11_KEY_LABELS' : 'MASTER_KEYS'}, or run \`npm run keys -- rewrap\` with a ring that has it first`,
        );
        continue;
      }
      try {
        await this.ring.unwrap(
          row.kek_id,
          row.wrapped_data_key,
          tenantKeyAd.data(row.tenant_id, row.version),
        );
      } catch (error) {
        problems.push(
          `master key version "${row.kek_id}" of the ${this.ring.provider} keyring does not open the ${row.count} stored tenant key(s) wrapped under that name (${(error as Error).message}): it is another key than the one that wrapped them; set ${variable} to the keyring this database was made with (after a restore: the backup's)`,
        );
      }
    }
    if (problems.length) throw new ConfigError(problems);
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
        await this.ring.wrap(kek, randomBytes(32), tenantKeyAd.data(tenantId, 1)),
        await this.ring.wrap(kek, randomBytes(32), tenantKeyAd.fingerprint(tenantId, 1)),
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
    this.tokenKeys.keep(key.tenantId, key.tokenId, key.unwrappedKey);
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
      const cached = this.tokenKeys.get(tenantId, subjectId);
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

  /**
   * A search index's blind value: HMAC-SHA256 of the text under the tenant's search key. Equal
   * texts give equal values within a tenant (what a search matches), unrelated ones across
   * tenants; without the master key nobody can compute one to test a guess.
   */
  async searchIndex(tenantId: string, text: string): Promise<string> {
    const { searchKey } = await this.tenantKeys(tenantId);
    return hmac(searchKey, text);
  }

  /** Forgets unwrapped keys held in memory: after a tenant's keys were destroyed or rotated, or all (null). */
  forget(tenantId: string | null): void {
    if (tenantId === null) {
      this.keys.clear();
      this.tokenKeys.clear();
    } else {
      this.keys.forget(tenantId);
      this.tokenKeys.forgetTenant(tenantId);
    }
  }

  /** Forgets a token's unwrapped key: its key was destroyed or replaced. */
  forgetToken(tenantId: string, tokenId: string): void {
    this.tokenKeys.forgetToken(tenantId, tokenId);
  }

  /** How many unwrapped token keys this process holds (metrics, tests). */
  get cachedTokenKeys(): number {
    return this.tokenKeys.size;
  }

  private async tokenKey(tenantId: string, tokenId: string): Promise<KeyObject> {
    const cached = this.tokenKeys.get(tenantId, tokenId);
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
    this.tokenKeys.keep(tenantId, tokenId, key);
    return key;
  }

  private tenantKeys(tenantId: string): Promise<TenantKeys> {
    return this.keys.get(tenantId, (id) => this.loadTenantKeys(id));
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

const plaintextOf = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8');
