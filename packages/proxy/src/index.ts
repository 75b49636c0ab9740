export { proxyContext, type ProxyContextDeps } from './context.ts';
export { ProxyGateway, type ProxyConfig, type ProxyGatewayDeps } from './http/proxy-invoke.routes.ts';
export {
  proxyKeyHeader,
  proxyKeyParameter,
  proxyUrlHeader,
  resolveProxy,
  type ProxyInvocation,
} from './http/resolve-proxy.ts';
export { proxyOperations } from './http/operations.ts';
export type {
  ConfiguredProxy,
  ProxyConfiguration,
  ProxyTransform,
} from './queries/configured-proxy.queries.ts';
export { proxiesMigrations } from './migrations.ts';
export { proxiesProjection } from './projections/proxies.projection.ts';
export { proxyRoutes, type ProxyRouteDeps } from './http/proxies.routes.ts';
export { ProxyQueries } from './queries/proxies.queries.ts';
export { proxyDecider } from './domain/proxy.ts';
export { streams as proxiesStreams, proxiesEventTypes, type ProxiesEvent } from './domain/proxy.events.ts';
export {
  ProxyPipeline,
  type ProxyPipelineDeps,
  type ProxyStages,
  type StagedProxy,
} from './pipeline/stage-pipeline.ts';
export { encodeBody, type BodyKind, type ProxiedRequest } from './request/forwarding.ts';
