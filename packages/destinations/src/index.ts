export { AddressAllowlist, embeddedIpv4, ipv6Bytes, nonPublicKind } from './addresses.ts';
export {
  resolveDestination,
  systemResolver,
  type Destination,
  type DestinationPolicy,
  type ResolvedAddress,
  type Resolver,
} from './resolve.ts';
export { DestinationConnections, type DestinationConnectionLimits } from './connections.ts';
export {
  sendToDestination,
  type DestinationResponse,
  type OutgoingRequest,
  type SendLimits,
} from './send.ts';
