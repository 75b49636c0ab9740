import type { ContextManifest } from '@tokenvault/cqrs';
import { proxiesEventTypes } from './domain/proxy.events.ts';
import { proxyOperations } from './http/operations.ts';
import { proxyRoutes, type ProxyRouteDeps } from './http/proxies.routes.ts';
import { proxiesMigrations } from './migrations.ts';
import { proxiesProjection } from './projections/proxies.projection.ts';

/**
 * What the proxy context contributes to the service (the runtime lists it in contexts.ts). Its
 * `/proxy/**` gateway is not a JSON route: the gateway role mounts it (ProxyGateway).
 */
export const proxyContext: ContextManifest<ProxyRouteDeps> = {
  name: 'proxy',
  migrations: proxiesMigrations,
  projections: { consistent: [proxiesProjection], trailing: [] },
  effects: { inline: [], external: [] },
  eventTypes: proxiesEventTypes,
  routes: (deps) => proxyRoutes(deps),
  documentedOperations: proxyOperations,
};
