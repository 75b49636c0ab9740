import type { DomainEvent } from '@tokenvault/cqrs';
import type { ProxyTransform } from '../queries/configured-proxy.queries.ts';

/**
 * The sealing subjects of a proxy's secrets (associated data with the tenant id): sealed for one
 * proxy, they open for that proxy only. The `/` keeps them apart from every token id.
 */
export const configurationSubject = (proxyId: string) => `proxy/${proxyId}/configuration`;
export const keySubject = (proxyId: string) => `proxy/${proxyId}/key`;

export type ProxiesEvent =
  | DomainEvent<
      'ProxyCreated',
      {
        proxy_id: string;
        tenant_id: string;
        name: string;
        destination_url: string;
        request_reactor_id?: string;
        response_reactor_id?: string;
        request_transforms: ProxyTransform[];
        response_transforms: ProxyTransform[];
        application_id?: string;
        /** The configuration, sealed under the tenant's data key (`configurationSubject`). */
        configuration_ciphertext: string;
        /** The key, sealed (`keySubject`): shown to whoever may read the proxy. */
        key_ciphertext: string;
        /** SHA-256 of the key (hex): how an invocation finds the proxy, without the key at rest. */
        key_hash: string;
        require_auth: boolean;
        /** Seconds. */
        timeout?: number;
        created_by: string;
        created_at: string;
      }
    >
  | DomainEvent<
      'ProxyUpdated',
      {
        proxy_id: string;
        tenant_id: string;
        name: string;
        destination_url: string;
        request_reactor_id?: string;
        response_reactor_id?: string;
        request_transforms: ProxyTransform[];
        response_transforms: ProxyTransform[];
        application_id?: string;
        /** The configuration, sealed under the tenant's data key (`configurationSubject`). */
        configuration_ciphertext: string;
        require_auth: boolean;
        /** Seconds. */
        timeout?: number;
        modified_by: string;
        modified_at: string;
      }
    >
  | DomainEvent<
      'ProxyDeleted',
      { proxy_id: string; tenant_id: string; deleted_by: string; deleted_at: string }
    >;

export const streams = {
  proxy: (tenantId: string, proxyId: string) => `proxies.proxy-${tenantId}-${proxyId}`,
};

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const proxiesEventTypes = Object.keys({
  ProxyCreated: true,
  ProxyUpdated: true,
  ProxyDeleted: true,
} satisfies Record<ProxiesEvent['type'], true>) as ProxiesEvent['type'][];
