import type { ContextManifest, ReadModelConsistency } from '@tokenvault/cqrs';
import { ProxyCommands, type ProxyCommandDeps } from './commands/proxies.commands.ts';
import { proxiesEventTypes } from './domain/proxy.events.ts';
import { proxyOperations } from './http/operations.ts';
import { proxyRoutes } from './http/proxies.routes.ts';
import { proxiesMigrations } from './migrations.ts';
import { proxiesProjection } from './projections/proxies.projection.ts';
import type { ProxyQueries } from './queries/proxies.queries.ts';

/** What the proxy context's routes are built from: its commands' collaborators, its queries. */
export interface ProxyContextDeps extends ProxyCommandDeps {
  consistency: ReadModelConsistency;
  proxies: ProxyQueries;
}

/**
 * What the proxy context contributes to the service (the runtime lists it in contexts.ts). Its
 * `/proxy/**` gateway is not a JSON route: the gateway role mounts it (ProxyGateway).
 */
export const proxyContext: ContextManifest<ProxyContextDeps> = {
  name: 'proxy',
  migrations: proxiesMigrations,
  projections: { consistent: [proxiesProjection], trailing: [] },
  effects: { inline: [], external: [] },
  eventTypes: proxiesEventTypes,
  // The context's composition step: its commands, built once from the process's collaborators.
  routes: (deps) =>
    proxyRoutes({ commands: new ProxyCommands(deps), queries: deps.proxies, consistency: deps.consistency }),
  documentedOperations: proxyOperations,
};
