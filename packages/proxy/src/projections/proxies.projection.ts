import { onTenantDeleted, type Projection, type TenantDeletedEvent } from '@tokenvault/cqrs';
import type { PoolClient } from '@tokenvault/platform';
import type { RecordedOf } from '@tokenvault/eventstore';
import type { ProxiesEvent } from '../domain/proxy.events.ts';

type Handled = ProxiesEvent | TenantDeletedEvent;

const ownedTables = ['proxies', 'proxy_keys'] as const;

const tenantDeleted = onTenantDeleted(ownedTables);

export const proxiesProjection: Projection<Handled> = {
  name: 'proxies',
  tables: ownedTables,
  handles: ['ProxyCreated', 'ProxyUpdated', 'ProxyDeleted', 'TenantDeleted'],
  async apply(events, tx) {
    for (const event of events) await applyOne(event, tx);
  },
};

async function applyOne(event: RecordedOf<Handled>, tx: PoolClient): Promise<void> {
  switch (event.type) {
    case 'ProxyCreated': {
      const d = event.data;
      await tx.query(
        `INSERT INTO proxies (tenant_id, id, name, destination_url, request_reactor_id, response_reactor_id,
                              request_transforms, response_transforms, application_id, configuration_ciphertext,
                              key_ciphertext, require_auth, timeout_seconds, created_by, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING`,
        [
          d.tenant_id,
          d.proxy_id,
          d.name,
          d.destination_url,
          d.request_reactor_id ?? null,
          d.response_reactor_id ?? null,
          JSON.stringify(d.request_transforms),
          JSON.stringify(d.response_transforms),
          d.application_id ?? null,
          d.configuration_ciphertext,
          d.key_ciphertext,
          d.require_auth,
          d.timeout ?? null,
          d.created_by,
          d.created_at,
        ],
      );
      await tx.query(
        'INSERT INTO proxy_keys (key_hash, tenant_id, proxy_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [d.key_hash, d.tenant_id, d.proxy_id],
      );
      return;
    }
    case 'ProxyUpdated': {
      const d = event.data;
      await tx.query(
        `UPDATE proxies SET name = $3, destination_url = $4, request_reactor_id = $5, response_reactor_id = $6,
                            request_transforms = $7, response_transforms = $8, application_id = $9,
                            configuration_ciphertext = $10, require_auth = $11, timeout_seconds = $12,
                            modified_by = $13, modified_at = $14
           WHERE tenant_id = $1 AND id = $2`,
        [
          d.tenant_id,
          d.proxy_id,
          d.name,
          d.destination_url,
          d.request_reactor_id ?? null,
          d.response_reactor_id ?? null,
          JSON.stringify(d.request_transforms),
          JSON.stringify(d.response_transforms),
          d.application_id ?? null,
          d.configuration_ciphertext,
          d.require_auth,
          d.timeout ?? null,
          d.modified_by,
          d.modified_at,
        ],
      );
      return;
    }
    case 'ProxyDeleted': {
      const d = event.data;
      await tx.query('DELETE FROM proxies WHERE tenant_id = $1 AND id = $2', [d.tenant_id, d.proxy_id]);
      await tx.query('DELETE FROM proxy_keys WHERE tenant_id = $1 AND proxy_id = $2', [
        d.tenant_id,
        d.proxy_id,
      ]);
      return;
    }
    case 'TenantDeleted':
      await tenantDeleted(tx, [event.data]);
      return;
    default: {
      // Fails to compile when an event type of the context has no case here.
      const unhandled: never = event;
      throw new Error(`no projection for ${(unhandled as Handled).type}`);
    }
  }
}
