export { AddressAllowlist, embeddedIpv4, nonPublicKind } from './destination/addresses.ts';
export {
  resolveDestination,
  systemResolver,
  type Destination,
  type Resolver,
} from './destination/resolve.ts';
export { sendToDestination, type DestinationResponse, type OutgoingRequest } from './destination/send.ts';
export { ProxyGateway, proxyUrlHeader, type ProxyConfig } from './http/invoke.ts';
export { proxyOperations } from './http/operations.ts';
export {
  ProxyPipeline,
  type ProxyCodeTransform,
  type ProxyPipelineDeps,
  type ProxyStages,
  type StagedProxy,
} from './pipeline/pipeline.ts';
export { encodeBody, type BodyKind, type ProxiedRequest } from './request/forwarding.ts';
