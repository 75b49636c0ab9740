import { createHash } from 'node:crypto';
import { namePattern, withTenant, type Pool } from '@tokenvault/platform';
import type { ProxyResponse } from '@tokenvault/contracts';
import type { Vault } from '@tokenvault/vault';
import { configurationSubject, keySubject } from '../domain/proxy.events.ts';
import type { ConfiguredProxy, ProxyConfiguration, ProxyTransform } from './configured-proxy.queries.ts';

export interface ProxyRow {
  id: string;
  tenant_id: string;
  name: string;
  destination_url: string;
  request_reactor_id: string | null;
  response_reactor_id: string | null;
  request_transforms: ProxyTransform[];
  response_transforms: ProxyTransform[];
  application_id: string | null;
  configuration_ciphertext: string;
  key_ciphertext: string;
  require_auth: boolean;
  timeout_seconds: number | null;
  created_by: string | null;
  created_at: Date | null;
  modified_by: string | null;
  modified_at: Date | null;
}

/** How a key is found at rest: its SHA-256 (a key is random, 256 bits: no salt needed). */
export const proxyKeyHash = (key: string) => createHash('sha256').update(key).digest('hex');

/**
 * Reads run as the tenant: row-level security hides every other tenant's rows. The key and the
 * configuration are sealed in the read model and opened here, with the tenant's data key.
 */
export class ProxyQueries {
  private readonly appPool: Pool;
  private readonly vault: Vault;

  constructor(appPool: Pool, vault: Vault) {
    this.appPool = appPool;
    this.vault = vault;
  }

  private configuration(row: ProxyRow): Promise<ProxyConfiguration> {
    return this.vault.decrypt(
      row.tenant_id,
      configurationSubject(row.id),
      row.configuration_ciphertext,
    ) as Promise<ProxyConfiguration>;
  }

  /** A proxy as answered: its key and configuration opened. */
  async response(row: ProxyRow): Promise<ProxyResponse> {
    const [configuration, key] = await Promise.all([
      this.configuration(row),
      this.vault.decrypt(row.tenant_id, keySubject(row.id), row.key_ciphertext) as Promise<string>,
    ]);
    return {
      id: row.id,
      key,
      tenant_id: row.tenant_id,
      name: row.name,
      destination_url: row.destination_url,
      ...(row.request_reactor_id ? { request_reactor_id: row.request_reactor_id } : {}),
      ...(row.response_reactor_id ? { response_reactor_id: row.response_reactor_id } : {}),
      request_transforms: row.request_transforms,
      response_transforms: row.response_transforms,
      ...(row.application_id ? { application_id: row.application_id } : {}),
      configuration,
      require_auth: row.require_auth,
      ...(row.timeout_seconds === null ? {} : { timeout: row.timeout_seconds }),
      ...(row.created_by ? { created_by: row.created_by } : {}),
      ...(row.created_at ? { created_at: row.created_at.toISOString() } : {}),
      ...(row.modified_by ? { modified_by: row.modified_by } : {}),
      ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
    };
  }

  private async row(tenantId: string, id: string): Promise<ProxyRow | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<ProxyRow>('SELECT * FROM proxies WHERE tenant_id = $1 AND id = $2', [
        tenantId,
        id,
      ]);
      return result.rows[0];
    });
  }

  async get(tenantId: string, id: string): Promise<ProxyResponse | undefined> {
    const row = await this.row(tenantId, id);
    return row ? this.response(row) : undefined;
  }

  async list(
    tenantId: string,
    filter: { ids: readonly string[]; name?: string | undefined },
    page: number,
    size: number,
  ): Promise<{ items: ProxyResponse[]; total: number }> {
    const where = ['tenant_id = $1'];
    const values: unknown[] = [tenantId];
    if (filter.ids.length > 0) {
      values.push(filter.ids);
      where.push(`id = ANY($${values.length}::uuid[])`);
    }
    if (filter.name !== undefined) {
      values.push(namePattern(filter.name));
      where.push(`name ILIKE $${values.length} ESCAPE '\\'`);
    }
    const condition = where.join(' AND ');
    const { rows, total } = await withTenant(this.appPool, tenantId, async (client) => {
      const [page_, count] = await Promise.all([
        client.query<ProxyRow>(
          `SELECT * FROM proxies WHERE ${condition}
           ORDER BY created_at, id LIMIT $${values.length + 1} OFFSET $${values.length + 2}`,
          [...values, size, (page - 1) * size],
        ),
        client.query<{ total: number }>(
          `SELECT count(*)::int AS total FROM proxies WHERE ${condition}`,
          values,
        ),
      ]);
      return { rows: page_.rows, total: count.rows[0]?.total ?? 0 };
    });
    return { items: await Promise.all(rows.map((row) => this.response(row))), total };
  }

  /** The proxy a key invokes, its configuration opened (undefined: no proxy has this key). */
  async byKey(key: string): Promise<ConfiguredProxy | undefined> {
    const found = await this.appPool.query<{ tenant_id: string; proxy_id: string }>(
      'SELECT tenant_id, proxy_id FROM proxy_keys WHERE key_hash = $1',
      [proxyKeyHash(key)],
    );
    const owner = found.rows[0];
    if (!owner) return undefined;
    const row = await this.row(owner.tenant_id, owner.proxy_id);
    if (!row) return undefined;
    return {
      id: row.id,
      tenant_id: row.tenant_id,
      destination: row.destination_url,
      require_auth: row.require_auth,
      ...(row.timeout_seconds === null ? {} : { timeout: Math.round(row.timeout_seconds * 1000) }),
      ...(row.request_reactor_id ? { request_reactor_id: row.request_reactor_id } : {}),
      ...(row.response_reactor_id ? { response_reactor_id: row.response_reactor_id } : {}),
      request_transforms: row.request_transforms,
      response_transforms: row.response_transforms,
      configuration: await this.configuration(row),
      ...(row.application_id ? { application_id: row.application_id } : {}),
    };
  }
}
